//! `docs-agent eval`: loads the pack, runs it (see `crate::eval`), prints the table and writes
//! the reports; the exit code says whether a case failed.

use std::path::Path;

use super::{Exit, Failure, Global};

/// Runs the pack in `cases` (optionally one category), writing JUnit and JSON reports when asked.
pub fn eval(
    global: &Global,
    filter: Option<&str>,
    junit: Option<&Path>,
    json: Option<&Path>,
    cases: &Path,
    jobs: Option<usize>,
    retrieval: bool,
) -> Result<Exit, Failure> {
    use crate::eval::{self, report, run::ModelChoice};
    if global.workspace.is_some() || global.max_steps.is_some() || global.config.is_some() {
        return Err((
            Exit::Usage,
            "eval takes no --workspace, --max-steps or --config: each case names its workspace and sets its limits in its `env`".into(),
        ));
    }
    let categories = eval::case::load(cases).map_err(|e| (Exit::Usage, e.to_string()))?;
    let mut models = ModelChoice { name: None, base_url: global.base_url.clone(), retrieval };
    match global.model.as_deref() {
        Some(url) if url.starts_with("http://") || url.starts_with("https://") => {
            models.base_url = Some(url.to_string())
        }
        Some(name) => models.name = Some(name.to_string()),
        None => {}
    }
    if models.base_url.is_some() && models.name.is_none() {
        models.name = std::env::var("LLM_MODEL").ok().or(Some("llama3.2:3b".to_string()));
    }
    let root = cases.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    for category in &categories {
        for case in &category.cases {
            if !root.join(&case.workspace).is_dir() {
                return Err((
                    Exit::Usage,
                    format!(
                        "{}: case `{}`: workspace {} is not a folder",
                        category.name,
                        case.name,
                        root.join(&case.workspace).display()
                    ),
                ));
            }
        }
    }
    // Before the sandbox: the report files (opened now, filled at the end), the private folder
    // the cases' copies go in, and the cores the process may use (the cgroup's limit is hidden
    // once inside).
    let reports: Vec<Report> = junit.into_iter().chain(json).map(Report::open).collect::<Result<_, _>>()?;
    let scratch = super::sandbox::eval_scratch()?;
    let jobs = jobs.unwrap_or_else(super::sandbox::cores);
    let mut workspaces: Vec<std::path::PathBuf> =
        categories.iter().flat_map(|c| &c.cases).map(|case| root.join(&case.workspace)).collect();
    workspaces.sort();
    workspaces.dedup();
    super::sandbox::enter(global, &super::sandbox::for_eval(&workspaces, &scratch, models.base_url.as_deref()))?;
    let mut progress = crate::guard::sink::stderr_shared();
    let results = eval::run_all(&categories, filter, root, &scratch, &models, jobs, &mut progress);
    if results.is_empty() {
        return Err((Exit::Usage, format!("no eval case matches the filter {filter:?} in {}", cases.display())));
    }
    let mut out = crate::guard::sink::stdout();
    let _ = report::table(&results, &mut out);
    let mut reports = reports.into_iter();
    if junit.is_some() {
        let xml = report::junit(&results).map_err(|e| (Exit::Failure, e.to_string()))?;
        reports.next().map_or(Ok(()), |report| report.fill(&xml))?;
    }
    if json.is_some() {
        let text = report::json(&results).map_err(|e| (Exit::Failure, e.to_string()))?;
        reports.next().map_or(Ok(()), |report| report.fill(&text))?;
    }
    Ok(if eval::failed(&results, &models) { Exit::Failure } else { Exit::Ok })
}

/// A report file, opened before the sandbox (so no rule has to name it, and `/dev/stdout` or a
/// pipe works too) and filled when the results are in.
struct Report {
    /// Where it is, for messages.
    path: std::path::PathBuf,
    /// Open for writing; a regular file keeps its old content until it is filled.
    file: std::fs::File,
}

impl Report {
    /// Opens (creating) `path` for writing.
    fn open(path: &Path) -> Result<Report, Failure> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| (Exit::Usage, format!("cannot open {} to write the report: {e}", path.display())))?;
        Ok(Report { path: path.to_path_buf(), file })
    }

    /// Replaces a regular file's content with `bytes`; writes them to anything else.
    fn fill(mut self, bytes: &[u8]) -> Result<(), Failure> {
        use std::io::Write;
        let fail = |e: std::io::Error| (Exit::Failure, format!("cannot write {}: {e}", self.path.display()));
        if self.file.metadata().is_ok_and(|m| m.is_file()) {
            self.file.set_len(0).map_err(fail)?;
        }
        self.file.write_all(bytes).and_then(|()| self.file.flush()).map_err(fail)
    }
}
