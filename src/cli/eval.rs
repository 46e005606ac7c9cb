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
    let categories = eval::case::load(cases).map_err(|e| (Exit::Usage, e))?;
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
    let mut workspaces: Vec<std::path::PathBuf> =
        categories.iter().flat_map(|c| &c.cases).map(|case| root.join(&case.workspace)).collect();
    workspaces.sort();
    workspaces.dedup();
    let reports: Vec<&Path> = junit.into_iter().chain(json).collect();
    super::sandbox::enter(global, &super::sandbox::for_eval(&workspaces, &reports, models.base_url.as_deref()))?;
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let mut progress = crate::guard::sink::stderr_shared();
    let results = eval::run_all(&categories, filter, root, &models, jobs, &mut progress);
    if results.is_empty() {
        return Err((Exit::Usage, format!("no eval case matches the filter {filter:?} in {}", cases.display())));
    }
    let mut out = crate::guard::sink::stdout();
    let _ = report::table(&results, &mut out);
    if let Some(path) = junit {
        report::junit(&results, path).map_err(|e| (Exit::Failure, e))?;
    }
    if let Some(path) = json {
        report::json(&results, path).map_err(|e| (Exit::Failure, e))?;
    }
    Ok(if eval::failed(&results, &models) { Exit::Failure } else { Exit::Ok })
}
