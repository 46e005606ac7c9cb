//! The question sets of `bench/questions/`, as the retrieval and evidence benches read them:
//! support tickets with their gold files and sections (odd ids `dev`, even ids `held-out`).

use std::path::Path;

/// One question of a set (an off-topic one has no gold).
#[derive(serde::Deserialize)]
pub struct Question {
    /// `polar-001`.
    pub id: String,
    /// `dev` or `held-out`.
    pub split: String,
    /// The ticket.
    pub question: String,
    /// `path` or `path#anchor` entries that answer it.
    #[serde(default)]
    pub gold: Vec<String>,
}

impl Question {
    /// `path` is a gold file.
    pub fn gold_file(&self, path: &str) -> bool {
        self.gold.iter().any(|g| g.split('#').next() == Some(path))
    }

    /// The section is gold (a bare gold path takes any of its sections).
    pub fn gold_section(&self, path: &str, anchor: &str) -> bool {
        self.gold.iter().any(|g| match g.split_once('#') {
            Some((p, a)) => p == path && a == anchor,
            None => g == path,
        })
    }
}

/// The questions of `bench/questions/{name}` under the crate's root.
pub fn load(root: &Path, name: &str) -> Result<Vec<Question>, String> {
    let file = root.join("bench/questions").join(name);
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("{}:{}: {e}", file.display(), i + 1)))
        .collect()
}
