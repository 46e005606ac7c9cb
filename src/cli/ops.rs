//! Small commands for operators: `redact` (a filter for logs), `hash-token` (for a
//! `[[serve.tokens]]` entry), `health` (the container's health check) and `pull` (the model,
//! through Ollama).

use std::io::{Read, Write};

use super::{Exit, Failure};
use crate::runtime::{self, Flavor};

/// `docs-agent redact`: stdin to stdout through the redactor.
pub fn redact_stdin() -> Result<Exit, Failure> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| (Exit::Failure, format!("cannot read stdin as UTF-8 text: {e}")))?;
    // The sink redacts: it is the one redaction this text gets on its way out.
    let mut out = crate::guard::sink::stdout();
    crate::guard::sink::reader_gone(out.write_all(input.as_bytes()).and_then(|()| out.flush()))
        .map_err(|e| (Exit::Failure, format!("cannot write stdout: {e}")))?;
    Ok(Exit::Ok)
}

/// `docs-agent hash-token`: the SHA-256 of the token on stdin, for `[[serve.tokens]]`.
pub fn hash_token() -> Result<Exit, Failure> {
    let mut token = String::new();
    std::io::stdin()
        .read_line(&mut token)
        .map_err(|e| (Exit::Failure, format!("cannot read the token from stdin: {e}")))?;
    let token = token.trim();
    if token.len() < 16 {
        return Err((Exit::Usage, "a token must be at least 16 characters (e.g. `openssl rand -hex 24`)".into()));
    }
    crate::guard::sink::out_line!("{}", crate::serve::auth::hash(token));
    Ok(Exit::Ok)
}

/// `docs-agent health`: exit 0 when the server at `url` answers 2xx. Prints the kernel
/// sandbox this process got (`sandbox`), which is what any docs-agent command gets here.
pub fn health(url: &str, sandbox: &crate::sandbox::Status) -> Result<Exit, Failure> {
    crate::guard::sink::out_line!("sandbox: {}", sandbox.describe());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = runtime::build(Flavor::OneThread).map_err(|e| (Exit::Failure, e.to_string()))?;
    let status = runtime.block_on(async {
        let client = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(3))
            .build()
            .map_err(|e| (Exit::Failure, format!("cannot start the HTTP client: {e}")))?;
        let response =
            client.get(url).send().await.map_err(|e| (Exit::Failure, format!("{url} did not answer: {e}")))?;
        Ok::<_, Failure>(response.status())
    })?;
    if status.is_success() { Ok(Exit::Ok) } else { Err((Exit::Failure, format!("{url} answered {status}"))) }
}

/// `docs-agent init --to FILE [--replace]`: a configuration for `serve` with one fresh admin
/// token (24 random bytes, hex), private to its owner; the token is printed once on stdout, the
/// file keeps its SHA-256. The file appears whole or not at all (written beside it, then linked
/// or renamed into place), so a `serve --wait-for-config` polling it never reads half of it.
/// An existing FILE is left as it is unless `replace`.
pub fn init(to: &std::path::Path, replace: bool) -> Result<Exit, Failure> {
    let token = new_token()?;
    let text = format!(
        "# Written by `docs-agent init`. Keep the token it printed: only its SHA-256 is here.\n\
         # More callers: `docs-agent tokens add NAME --role ask` (a running serve takes it).\n\
         # serve listens on 127.0.0.1:8080 unless --listen or serve.listen says otherwise.\n\n\
         [[serve.tokens]]\nprincipal = \"admin\"\nsha256 = \"{}\"\nroles = [\"ask\", \"approve\", \"admin\"]\n",
        crate::serve::auth::hash(&token)
    );
    if !replace && to.exists() {
        return Err(exists(to));
    }
    place(to, &text, replace).map_err(|e| if to.exists() && !replace { exists(to) } else { e })?;
    if let Some(note) = ignored_by_git(to) {
        crate::guard::sink::err_line!("{note}");
    }
    crate::guard::sink::err_line!("wrote {} with one admin token; it is shown once, here:", to.display());
    // A bare random hex string is not a secret's shape to the sink, so it passes whole (a test
    // checks the printed token is the one whose hash was written).
    crate::guard::sink::out_line!("{token}");
    Ok(Exit::Ok)
}

/// A new token: 24 random bytes as hex.
pub fn new_token() -> Result<String, Failure> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(|e| (Exit::Failure, format!("drawing a random token: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Puts `text` at `to` at once: a synced private file beside it, renamed over it when
/// `replace`, else linked there (which fails if a file appeared meanwhile).
pub fn place(to: &std::path::Path, text: &str, replace: bool) -> Result<(), Failure> {
    place_like(to, text, replace, None)
}

/// [`place`], the new file taking the mode (and, for root, the owner) of `like`, the file it
/// replaces: a config another user's serve reads stays readable to it.
pub fn place_like(
    to: &std::path::Path,
    text: &str,
    replace: bool,
    like: Option<&std::fs::Metadata>,
) -> Result<(), Failure> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let cannot = |e: std::io::Error| (Exit::Failure, format!("cannot write {}: {e}", to.display()));
    let draft = draft_beside(to, text).map_err(cannot)?;
    if let Some(like) = like {
        let kept = std::fs::set_permissions(&draft, std::fs::Permissions::from_mode(like.mode() & 0o7777)).and_then(
            // Only root may give a file away; anyone else keeps their own.
            |()| match is_root() {
                true => std::os::unix::fs::chown(&draft, Some(like.uid()), Some(like.gid())),
                false => Ok(()),
            },
        );
        if let Err(e) = kept {
            let _ = std::fs::remove_file(&draft);
            return Err(cannot(e));
        }
    }
    let placed = if replace { std::fs::rename(&draft, to) } else { std::fs::hard_link(&draft, to) };
    let _ = std::fs::remove_file(&draft);
    placed.map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            (Exit::Failure, format!("{} appeared while it was being written; run the command again", to.display()))
        }
        _ => cannot(e),
    })
}

/// True when this process runs as root.
fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// When `file` lies in a git repository's working tree, adds its name to the `.gitignore` of
/// its folder (it holds the hashes of every caller's token, and is the deployment's, not the
/// project's); what was done, for the person.
fn ignored_by_git(file: &std::path::Path) -> Option<String> {
    let folder = crate::sandbox::data::folder_of(file);
    let real = std::fs::canonicalize(folder).ok()?;
    real.ancestors().find(|dir| dir.join(".git").exists())?;
    let name = file.file_name()?.to_string_lossy().into_owned();
    let ignore = folder.join(".gitignore");
    let text = std::fs::read_to_string(&ignore).unwrap_or_default();
    let listed = text.lines().any(|line| {
        let line = line.trim();
        line == name || line == format!("/{name}")
    });
    if listed {
        return None;
    }
    let line = format!("{}/{name}\n", if text.is_empty() || text.ends_with('\n') { "" } else { "\n" });
    let added = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&ignore)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    Some(match added {
        Ok(()) => format!("added /{name} to {} (it holds every caller's token hash)", ignore.display()),
        Err(e) => format!("docs-agent: warning: cannot add /{name} to {}: {e}; keep it out of git", ignore.display()),
    })
}

/// `init`'s refusal to replace `to`.
fn exists(to: &std::path::Path) -> Failure {
    (
        Exit::Failure,
        format!(
            "{} already exists and is left as it is; to add a caller, `docs-agent tokens add NAME --role ask` \
             (in compose: `docker compose run --rm tokens add NAME --role ask`); to start again with a new admin token, `docs-agent init --replace` \
             (in compose: `docker compose run --rm init --replace`), which makes the old tokens stop working",
            to.display()
        ),
    )
}

/// Writes `text` to a new private file beside `to` and syncs it; its path.
fn draft_beside(to: &std::path::Path, text: &str) -> std::io::Result<std::path::PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = to.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let draft = to.with_file_name(format!(".{name}.init-{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&draft)?;
    let written = file.write_all(text.as_bytes()).and_then(|()| file.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(&draft);
        return Err(e);
    }
    Ok(draft)
}

/// `docs-agent pull`: Ollama pulls `llm.model`; progress on stderr (one line redrawn on a
/// terminal, a line per step otherwise).
pub fn pull(config: crate::config::Config) -> Result<Exit, Failure> {
    let llm = &config.llm;
    if crate::model::builtin::Builtin::from_name(&llm.model).is_some() {
        crate::guard::sink::err_line!("nothing to pull: `{}` is built into docs-agent", llm.model);
        return Ok(Exit::Ok);
    }
    pull_with_progress(llm)?;
    crate::guard::sink::err_line!("pulled {}; ask with `docs-agent \"your question\"`", llm.model);
    Ok(Exit::Ok)
}

/// Before a question (`llm.pull = missing`): when the model is not built in and the server
/// says it lacks it (`name` or, untagged, `name:latest` is not in `GET /models`), asks it to
/// pull the model (Ollama's `/api/pull`), with progress. Any other answer of the server, and a
/// pull that fails, are left for the question itself to meet and report.
pub fn pull_if_missing(llm: &crate::config::LlmConfig) -> Result<(), Failure> {
    let runtime = runtime::build(Flavor::OneThread).map_err(|e| (Exit::Failure, e.to_string()))?;
    let presence = runtime.block_on(crate::model::pull::presence(llm)).map_err(|e| (Exit::Model, e.to_string()))?;
    if !matches!(presence, crate::model::pull::Presence::Missing) {
        return Ok(());
    }
    crate::guard::sink::err_line!(
        "docs-agent: the model server lacks {}; pulling it first (llm.pull = missing)",
        llm.model
    );
    // A pull that fails (a server that is not Ollama, no network to the registry) is said, and
    // the question goes on to meet the server's own answer.
    if let Err((_, message)) = pull_with_progress(llm) {
        crate::guard::sink::err_line!("docs-agent: warning: the pull failed: {message}");
    }
    Ok(())
}

/// Asks Ollama to pull `llm.model`, showing its progress on stderr.
fn pull_with_progress(llm: &crate::config::LlmConfig) -> Result<(), Failure> {
    use crate::model::pull::{self, Progress};
    let _ = rustls::crypto::ring::default_provider().install_default();
    let terminal = crate::guard::sink::stderr_is_terminal();
    let runtime = runtime::build(Flavor::OneThread).map_err(|e| (Exit::Failure, e.to_string()))?;
    let mut last = String::new();
    let mut on = |progress: Progress| {
        // Without a terminal, a line per tenth is enough.
        let line = progress.describe(!terminal);
        if line == last {
            return;
        }
        if terminal {
            crate::guard::sink::err_part!("\r\x1b[K{}: {line}", llm.model);
        } else {
            crate::guard::sink::err_line!("{}: {line}", llm.model);
        }
        last = line;
    };
    let result = runtime.block_on(pull::pull(llm, &mut on));
    if terminal {
        crate::guard::sink::err_line!();
    }
    result.map_err(|e| (Exit::Model, e.to_string()))
}
