//! `docs-agent tokens add|list|revoke`: the callers of `serve`, kept as `[[serve.tokens]]`
//! entries of its config file. The file is edited with `toml_edit`, so its comments and the
//! rest of it stay as they were, and replaced atomically (a new file beside it, renamed over
//! it): a running `serve` reads either the old file or the new one, never half of one, and picks
//! the change up within seconds (`cli::serve`). A token is printed once; only its SHA-256 is
//! written.

use std::path::Path;

use toml_edit::{Array, ArrayOfTables, DocumentMut, Item, Table, value};

use super::args::{TokenRole, TokensAction};
use super::{Exit, Failure};
use crate::serve::auth::tokens::Listed;

/// Runs `tokens ACTION` on the config file `file`, holding a lock beside it while it reads
/// and replaces the file, so two changes at once do not undo each other.
pub fn run(file: &Path, action: TokensAction) -> Result<Exit, Failure> {
    let lock_path = file.with_file_name(format!(
        ".{}.lock",
        file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    ));
    let cannot = |e: std::io::Error| (Exit::Failure, format!("cannot lock {}: {e}", lock_path.display()));
    let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&lock_path).map_err(cannot)?;
    lock.lock().map_err(cannot)?;
    match action {
        TokensAction::Add { name, roles, collections } => add(file, &name, &roles, &collections),
        TokensAction::List => list(file),
        TokensAction::Revoke { name } => revoke(file, &name),
    }
}

fn add(file: &Path, name: &str, roles: &[TokenRole], collections: &[String]) -> Result<Exit, Failure> {
    check_name(name)?;
    let (mut document, existed) = read(file)?;
    // With [[collections]], a token names the ones it reads (the config check refuses one that
    // does not, so serve would not start); without, it may name none.
    let known: Vec<String> = document
        .get("collections")
        .and_then(|c| c.as_array_of_tables())
        .map(|list| list.iter().filter_map(|t| t.get("name")?.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    match (known.is_empty(), collections.is_empty()) {
        (false, true) => {
            return Err((
                Exit::Usage,
                format!(
                    "{} serves collections ({}): name the ones the token reads with --reads COLLECTION, or \
                     --reads '*' for all",
                    file.display(),
                    known.join(", ")
                ),
            ));
        }
        (true, false) => {
            return Err((Exit::Usage, format!("{} has no [[collections]]; leave out --reads", file.display())));
        }
        _ => {}
    }
    if let Some(unknown) = collections.iter().find(|c| *c != crate::config::ALL_COLLECTIONS && !known.contains(c)) {
        return Err((
            Exit::Usage,
            format!("{} has no collection {unknown:?}; its collections are {}", file.display(), known.join(", ")),
        ));
    }
    if entries(&document).iter().any(|entry| entry.principal == name) {
        return Err((
            Exit::Usage,
            format!("{name} has a token in {} already; `docs-agent tokens revoke {name}` first", file.display()),
        ));
    }
    let token = super::ops::new_token()?;
    let mut entry = Table::new();
    entry.insert("principal", value(name));
    entry.insert("sha256", value(crate::serve::auth::hash(&token)));
    let mut listed = Array::new();
    let mut roles: Vec<&str> = roles.iter().map(|r| r.role().as_str()).collect();
    roles.dedup();
    for role in roles {
        listed.push(role);
    }
    entry.insert("roles", value(listed));
    if !collections.is_empty() {
        let mut named = Array::new();
        for collection in collections {
            named.push(collection.as_str());
        }
        entry.insert("collections", value(named));
    }
    tokens_of(&mut document, file)?.push(entry);
    write(file, &document.to_string(), existed)?;
    crate::guard::sink::err_line!(
        "added a token for {name} to {}; it is shown once, here (a running serve takes it within seconds):",
        file.display()
    );
    // A bare random hex string is not a secret's shape to the sink, so it passes whole.
    crate::guard::sink::out_line!("{token}");
    Ok(Exit::Ok)
}

fn list(file: &Path) -> Result<Exit, Failure> {
    let (document, existed) = read(file)?;
    let found = entries(&document);
    if !existed || found.is_empty() {
        crate::guard::sink::err_line!(
            "no tokens in {}; `docs-agent tokens add NAME --role ask` adds one",
            file.display()
        );
        return Ok(Exit::Ok);
    }
    for Listed { principal, roles, sha256, .. } in found {
        let prefix = sha256.get(..12).unwrap_or(&sha256);
        crate::guard::sink::out_line!("{principal}  {}  sha256 {prefix}…", roles.join(","));
    }
    Ok(Exit::Ok)
}

fn revoke(file: &Path, name: &str) -> Result<Exit, Failure> {
    let (mut document, existed) = read(file)?;
    let tokens = tokens_of(&mut document, file)?;
    let before = tokens.len();
    tokens.retain(|entry| entry.get("principal").and_then(Item::as_str) != Some(name));
    let removed = before - tokens.len();
    if removed == 0 {
        return Err((
            Exit::Failure,
            format!("{} holds no token for {name}; `docs-agent tokens list` shows who has one", file.display()),
        ));
    }
    write(file, &document.to_string(), existed)?;
    crate::guard::sink::err_line!(
        "revoked {removed} token(s) of {name} in {}; a running serve refuses them within seconds",
        file.display()
    );
    Ok(Exit::Ok)
}

/// A name a principal may have: it shows in logs, metrics and the page.
fn check_name(name: &str) -> Result<(), Failure> {
    let fine = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@');
    if name.is_empty() || name.len() > 64 || !name.chars().all(fine) {
        return Err((
            Exit::Usage,
            format!(
                "`{}` cannot name a caller: use 1 to 64 letters, digits, `.`, `_`, `-` or `@`",
                crate::guard::clip(name, 40)
            ),
        ));
    }
    Ok(())
}

/// The config file as a document (an empty one when there is no file yet), and whether it
/// existed.
fn read(file: &Path) -> Result<(DocumentMut, bool), Failure> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((DocumentMut::new(), false)),
        Err(e) => return Err((Exit::Failure, format!("cannot read {}: {e}", file.display()))),
    };
    let document = text
        .parse::<DocumentMut>()
        .map_err(|e| (Exit::Usage, format!("{} is not valid TOML ({}); fix it first", file.display(), e.message())))?;
    Ok((document, true))
}

/// The `[[serve.tokens]]` entries as written (none when `serve.tokens` is not a list of
/// tables).
fn entries(document: &DocumentMut) -> Vec<Listed> {
    let Some(tokens) = document.get("serve").and_then(|s| s.get("tokens")).and_then(Item::as_array_of_tables) else {
        return Vec::new();
    };
    let text = |entry: &Table, key: &str| entry.get(key).and_then(Item::as_str).unwrap_or_default().to_string();
    let strings = |entry: &Table, key: &str| -> Vec<String> {
        entry
            .get(key)
            .and_then(Item::as_array)
            .map(|list| list.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    };
    tokens
        .iter()
        .map(|entry| Listed {
            sha256: text(entry, "sha256"),
            principal: text(entry, "principal"),
            roles: strings(entry, "roles"),
            collections: strings(entry, "collections"),
        })
        .collect()
}

/// The `[[serve.tokens]]` entries of `file`, read on their own (a running serve's watch, when
/// the rest of the file does not load, takes its revocations from them).
pub fn listed(file: &Path) -> Result<Vec<Listed>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let document = text.parse::<DocumentMut>().map_err(|e| format!("not valid TOML: {}", e.message()))?;
    let tokens = document.get("serve").and_then(|s| s.get("tokens"));
    if tokens.is_some_and(|t| t.as_array_of_tables().is_none()) {
        return Err("serve.tokens is not a list of tables".into());
    }
    Ok(entries(&document))
}

/// The `[[serve.tokens]]` array of the document, made when missing.
fn tokens_of<'a>(document: &'a mut DocumentMut, file: &Path) -> Result<&'a mut ArrayOfTables, Failure> {
    let not_a_table =
        || (Exit::Usage, format!("{}: `serve` or `serve.tokens` is not a table as expected", file.display()));
    let serve = document.entry("serve").or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    let serve = serve.as_table_mut().ok_or_else(not_a_table)?;
    serve
        .entry("tokens")
        .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()))
        .as_array_of_tables_mut()
        .ok_or_else(not_a_table)
}

/// Replaces `file` with `text` at once (a synced file beside it, renamed over it, with the old
/// file's mode and owner; a new file only when none appeared meanwhile).
fn write(file: &Path, text: &str, existed: bool) -> Result<(), Failure> {
    if existed && super::sandbox::rewritten_in_place(file) {
        return write_in_place(file, text);
    }
    let like = std::fs::metadata(file).ok();
    super::ops::place_like(file, text, existed, like.as_ref())
}

/// Rewrites `file` in place (a running serve reads that file alone: `cli::sandbox`), after
/// writing the whole new text to a copy beside it, so that a rewrite cut short loses nothing:
/// the error names the copy. A serve that reads the file while it is rewritten finds it
/// changed again once the rewrite ends, and reads it again.
fn write_in_place(file: &Path, text: &str) -> Result<(), Failure> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let copy = file.with_file_name(format!(".{name}.new"));
    let cannot = |e: std::io::Error| (Exit::Failure, format!("cannot write {}: {e}", copy.display()));
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&copy)
        .and_then(|mut draft| draft.write_all(text.as_bytes()).and_then(|()| draft.sync_all()))
        .map_err(cannot)?;
    let rewritten = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(file)
        .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|()| f.sync_all()));
    match rewritten {
        Ok(()) => {
            let _ = std::fs::remove_file(&copy);
            Ok(())
        }
        Err(e) => Err((
            Exit::Failure,
            format!(
                "cannot rewrite {} ({e}); its new text is in {}: copy it over the file by hand",
                file.display(),
                copy.display()
            ),
        )),
    }
}
