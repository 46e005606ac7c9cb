//! Reading SKILL.md files through the capability handle: regular, small, UTF-8 files only;
//! a FIFO is never opened and a link never leads out of its folder.

use super::*;

/// Entry names under `skills/`, sorted; hidden entries (`.git`, `.DS_Store`) are skipped.
pub(super) fn folder_names(skills_dir: &Dir) -> io::Result<Vec<std::ffi::OsString>> {
    let mut names = Vec::new();
    for entry in skills_dir.entries()? {
        let name = entry?.file_name();
        if !name.as_encoded_bytes().starts_with(b".") {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// Loads `skills/<name>/SKILL.md`, or says why it cannot; `None` for a loose file
/// beside the skill folders, which is not a skill.
pub(super) fn load_folder(skills_dir: &Dir, name: &std::ffi::OsStr) -> Option<Result<Skill, Vec<SkillProblem>>> {
    let result = match folder_kind(skills_dir, name) {
        Ok(false) => return None,
        Ok(true) => load_skill_folder(skills_dir, name),
        Err(problem) => Err(vec![problem]),
    };
    Some(result)
}

/// Whether `skills/<name>` is a folder (following symlinks that stay inside `skills/`).
pub(super) fn folder_kind(skills_dir: &Dir, name: &std::ffi::OsStr) -> Result<bool, SkillProblem> {
    match skills_dir.metadata(name) {
        Ok(meta) => Ok(meta.is_dir()),
        Err(err) => {
            let folder_path = format!("{SKILLS_DIR}/{}", name.to_string_lossy());
            Err(unreadable(&folder_path, None, &err))
        }
    }
}

/// Loads the SKILL.md of the folder `skills/<name>`.
pub(super) fn load_skill_folder(skills_dir: &Dir, name: &std::ffi::OsStr) -> Result<Skill, Vec<SkillProblem>> {
    let shown = name.to_string_lossy();
    let folder_path = format!("{SKILLS_DIR}/{shown}");
    let location = format!("{folder_path}/{SKILL_FILE}");
    let Some(folder_name) = name.to_str() else {
        let message = format!("folder name `{shown}` is not valid UTF-8; rename the folder to the skill's name");
        return Err(vec![problem_at(&folder_path, None, "name", message)]);
    };
    let folder = skills_dir.open_dir(name).map_err(|err| vec![unreadable(&folder_path, None, &err)])?;
    let text = read_skill_file(&folder, &location)?;
    Skills::parse(folder_name, &location, &text)
}

/// Reads SKILL.md from a skill folder: a regular UTF-8 file of at most [`MAX_SKILL_BYTES`].
pub(super) fn read_skill_file(folder: &Dir, location: &str) -> Result<String, Vec<SkillProblem>> {
    let one = |line, rule, message| vec![problem_at(location, line, rule, message)];
    let meta = match folder.metadata(SKILL_FILE) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound && !is_dangling_link(folder) => {
            let message = format!(
                "no {SKILL_FILE} in this skill folder; add one with `name` and `description` \
                 front matter, or remove the folder"
            );
            return Err(one(None, "missing-skill-md", message));
        }
        Err(err) => return Err(vec![unreadable(location, None, &err)]),
    };
    check_regular_and_small(&meta).map_err(|refused| one(None, "unreadable", refused.to_string()))?;
    // The type was checked before opening so a FIFO is never opened; check again on the
    // open handle in case the file was swapped in between.
    let file = folder.open(SKILL_FILE).map_err(|err| vec![unreadable(location, None, &err)])?;
    let meta = file.metadata().map_err(|err| vec![unreadable(location, None, &err)])?;
    check_regular_and_small(&meta).map_err(|refused| one(None, "unreadable", refused.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_SKILL_BYTES + 1).read_to_end(&mut bytes).map_err(|err| vec![unreadable(location, None, &err)])?;
    if bytes.len() as u64 > MAX_SKILL_BYTES {
        return Err(one(None, "unreadable", FileRefused::TooLarge.to_string()));
    }
    String::from_utf8(bytes).map_err(|err| {
        let valid = &err.as_bytes()[..err.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        let message = format!("file is not valid UTF-8 (bad byte at offset {}); save it as UTF-8", valid.len());
        one(Some(line), "unreadable", message)
    })
}

/// True when SKILL.md exists as a symlink whose target is missing.
pub(super) fn is_dangling_link(folder: &Dir) -> bool {
    folder.symlink_metadata(SKILL_FILE).is_ok_and(|meta| meta.file_type().is_symlink())
}

/// Why a SKILL.md is not opened, or not read past its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(super) enum FileRefused {
    /// A folder, FIFO or device where the file should be.
    #[error(
        "{file} is not a regular file (a directory, FIFO or device); replace it with a plain Markdown file",
        file = SKILL_FILE
    )]
    NotRegular,
    /// Over [`MAX_SKILL_BYTES`].
    #[error(
        "file is larger than {kib} KiB; keep the SKILL.md short and move long material into files the skill points to",
        kib = MAX_SKILL_BYTES / 1024
    )]
    TooLarge,
}

/// Says why a SKILL.md with this metadata must not be read, if it must not.
pub(super) fn check_regular_and_small(meta: &cap_std::fs::Metadata) -> Result<(), FileRefused> {
    if !meta.is_file() {
        return Err(FileRefused::NotRegular);
    }
    if meta.len() > MAX_SKILL_BYTES {
        return Err(FileRefused::TooLarge);
    }
    Ok(())
}

/// A problem for a file or folder the OS or the sandbox would not let us read.
pub(super) fn unreadable(file: &str, line: Option<usize>, err: &io::Error) -> SkillProblem {
    let message = format!(
        "cannot read it: {err}; it must be a regular file or folder inside the workspace \
         (symlinks may not lead outside)"
    );
    problem_at(file, line, "unreadable", message)
}

/// Builds a problem for `file`.
pub(super) fn problem_at(file: &str, line: Option<usize>, rule: &'static str, message: String) -> SkillProblem {
    SkillProblem { file: file.to_string(), line, rule, message }
}
