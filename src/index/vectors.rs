//! Hybrid search's second list: a unit vector for every indexed row (a section, or one window
//! of a long one) from the embedding model (`embed`), searched exactly: one dot product per row.
//! A few thousand sections of a few hundred dimensions take a millisecond or two to scan, so no
//! approximate index is needed (`bench/README.md` says where one would start to pay).
//!
//! Vectors are kept by what they were made from: the hash of a row's heading path and text
//! ([`text_hash`], stored with the row) under the embedder's identity (model, dimensions,
//! prefixes). So an update embeds only the text it has not seen, wherever it moved, and a
//! model change embeds everything again. Beside an index file they are cached in
//! `NAME.vectors.db` (written a batch at a time, so an interrupted first build keeps what it
//! finished); an index built in memory takes them from the generation before it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::{Connection, params};
use sha2::{Digest, Sha256};

use super::embed::{EmbedError, Embedder};
use super::{Index, IndexError, store};

/// What a row's vector is kept under: the SHA-256 (first 128 bits, in hex) of what is
/// embedded, [`passage_text`].
pub fn text_hash(heading: &str, body: &str) -> String {
    let digest = Sha256::digest(passage_text(heading, body).as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// What the model reads of a row: its heading path, a blank line, its text.
pub fn passage_text(heading: &str, body: &str) -> String {
    format!("{heading}\n\n{body}")
}

/// The rows nearest a question's vector, and how its similarity to every row spreads.
#[derive(Debug, Clone, Default)]
pub struct Near {
    /// The nearest rows, best first, with their cosine similarity.
    pub rows: Vec<(i64, f32)>,
    /// The mean similarity over every row.
    pub mean: f64,
    /// Its standard deviation.
    pub spread: f64,
}

impl Near {
    /// How many standard deviations `cosine` stands above the mean: 0 when the rows do not
    /// spread at all.
    pub fn standing(&self, cosine: f64) -> f64 {
        if self.spread <= f64::EPSILON { 0.0 } else { (cosine - self.mean) / self.spread }
    }
}

/// Every embedded row's vector, in one block of memory.
#[derive(Default)]
pub struct Vectors {
    /// Length of each vector.
    dims: usize,
    /// `rows.len() * dims` numbers, row by row, each vector of length 1.
    data: Vec<f32>,
    /// The `sections` rowid of each vector.
    rows: Vec<i64>,
    /// The text hash of each vector, to hand them on to the next generation.
    hashes: Vec<String>,
    /// Rows left without a vector (the embedding server failed): searched by keywords only.
    pub missing: usize,
}

impl Vectors {
    /// Rows with a vector.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when no row has a vector.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Length of each vector (0 when there are none).
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Bytes the vectors take.
    pub fn bytes(&self) -> usize {
        self.data.len() * std::mem::size_of::<f32>() + self.rows.len() * std::mem::size_of::<i64>()
    }

    /// The `n` rows nearest `query` (a unit vector of the same length), best first, with their
    /// cosine similarity.
    pub fn nearest(&self, query: &[f32], n: usize) -> Vec<(i64, f32)> {
        self.scan(query, n).rows
    }

    /// [`Vectors::nearest`], with how the question's similarity spreads over every row: what
    /// tells a section that stands out from the crowd (an answer put in other words) from one
    /// that is merely the least far (a question the docs do not answer).
    pub fn scan(&self, query: &[f32], n: usize) -> Near {
        if query.len() != self.dims || self.dims == 0 || n == 0 {
            return Near::default();
        }
        let mut scored: Vec<(f32, usize)> = self.data.chunks_exact(self.dims).map(|v| dot(v, query)).zip(0..).collect();
        let count = scored.len().max(1) as f64;
        let mean = scored.iter().map(|(s, _)| f64::from(*s)).sum::<f64>() / count;
        let variance = scored.iter().map(|(s, _)| (f64::from(*s) - mean).powi(2)).sum::<f64>() / count;
        let best = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if scored.len() > n {
            scored.select_nth_unstable_by(n - 1, best);
            scored.truncate(n);
        }
        scored.sort_by(best);
        let rows = scored.into_iter().map(|(score, i)| (self.rows[i], score)).collect();
        Near { rows, mean, spread: variance.sqrt() }
    }

    /// The vector of each text hash.
    fn by_hash(&self) -> HashMap<&str, &[f32]> {
        self.hashes.iter().map(String::as_str).zip(self.data.chunks_exact(self.dims.max(1))).collect()
    }
}

/// The dot product: the cosine of two unit vectors.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight running sums, so the compiler keeps them in vector registers.
    let mut sums = [0.0f32; 8];
    let (a8, a_rest) = a.split_at(a.len() - a.len() % 8);
    let (b8, b_rest) = b.split_at(a8.len());
    for (x, y) in a8.chunks_exact(8).zip(b8.chunks_exact(8)) {
        for i in 0..8 {
            sums[i] += x[i] * y[i];
        }
    }
    sums.iter().sum::<f32>() + a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum::<f32>()
}

/// The vectors of one generation and the model that asks for a question's.
pub struct Semantic {
    /// The embedding model.
    pub embedder: Arc<Embedder>,
    /// Every row's vector.
    pub vectors: Vectors,
}

/// Where an index file's vectors are cached: `index.db` gives `index.vectors.db`.
pub fn cache_path(index_file: &Path) -> PathBuf {
    let stem = index_file.file_stem().map_or_else(|| "index".into(), |s| s.to_string_lossy().into_owned());
    index_file.with_file_name(format!("{stem}.vectors.db"))
}

/// The vector cache beside an index file.
struct Cache {
    conn: Connection,
    file: PathBuf,
}

impl Cache {
    fn open(file: &Path) -> Result<Cache, IndexError> {
        let conn = store::connect(file)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS vectors (
                 model TEXT NOT NULL, hash TEXT NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (model, hash)
             ) WITHOUT ROWID;",
        )?;
        Ok(Cache { conn, file: file.to_path_buf() })
    }

    /// The vectors kept under `identity` for the `wanted` hashes.
    fn load(&self, identity: &str, wanted: &HashSet<&str>) -> Result<HashMap<String, Vec<f32>>, IndexError> {
        let mut stmt = self.conn.prepare("SELECT hash, vec FROM vectors WHERE model = ?1")?;
        let rows = stmt.query_map(params![identity], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?)))?;
        let mut found = HashMap::new();
        for row in rows {
            let (hash, bytes) = row?;
            if wanted.contains(hash.as_str()) {
                found.insert(hash, from_bytes(&bytes));
            }
        }
        Ok(found)
    }

    /// Keeps `items` under `identity`, in one transaction.
    fn put(&mut self, identity: &str, items: &[(&str, &[f32])]) -> Result<(), IndexError> {
        let tx = self.conn.transaction()?;
        {
            let mut insert =
                tx.prepare_cached("INSERT OR REPLACE INTO vectors (model, hash, vec) VALUES (?1, ?2, ?3)")?;
            for (hash, vector) in items {
                insert.execute(params![identity, hash, to_bytes(vector)])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Drops the vectors of other identities and of text no row holds any more.
    pub(super) fn prune(&mut self, identity: &str, keep: &HashSet<&str>) -> Result<(), IndexError> {
        let tx = self.conn.transaction()?;
        tx.execute("DELETE FROM vectors WHERE model <> ?1", params![identity])?;
        let stale: Vec<String> = {
            let mut stmt = tx.prepare("SELECT hash FROM vectors WHERE model = ?1")?;
            let hashes = stmt.query_map(params![identity], |r| r.get::<_, String>(0))?;
            hashes.filter_map(Result::ok).filter(|h| !keep.contains(h.as_str())).collect()
        };
        {
            let mut delete = tx.prepare("DELETE FROM vectors WHERE model = ?1 AND hash = ?2")?;
            for hash in &stale {
                delete.execute(params![identity, hash])?;
            }
        }
        tx.commit()?;
        Ok(())
    }
}

fn to_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_bytes(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// Drops from the cache `file` the vectors of other models (and prefixes) than `embedder`'s and
/// of text `index` no longer holds: what `index rebuild` does. Processes that embed keep every
/// vector they find, so two configurations sharing a cache never delete each other's.
pub fn prune_cache(file: &Path, index: &Index, embedder: &Embedder) -> Result<(), IndexError> {
    let hashes: Vec<String> = {
        let conn = index.reader();
        let mut stmt = conn.prepare("SELECT hash FROM sections")?;
        stmt.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?
    };
    let keep: HashSet<&str> = hashes.iter().map(String::as_str).collect();
    Cache::open(file)?.prune(&embedder.identity(), &keep)
}

/// How embedding an index went.
pub struct Filled {
    /// The index's vectors, and the embedder.
    pub semantic: Semantic,
    /// Rows whose text was sent to the model now.
    pub embedded: usize,
    /// Why some rows have no vector, if some have none.
    pub failure: Option<EmbedError>,
    /// The cache file could not be read or written: the vectors were made without it.
    pub cache_warning: Option<String>,
}

impl Filled {
    /// What the log or the command line says when the server failed: why, and how many of the
    /// index's `sections` are left to keywords.
    pub fn failure_warning(&self, sections: usize) -> Option<String> {
        self.failure.as_ref().map(|e| {
            format!(
                "{e}; {} of {sections} sections have no vector and are found by keywords only until it answers",
                self.semantic.vectors.missing
            )
        })
    }
}

impl Index {
    /// The vectors of every row of this index: taken from `previous` (the generation before)
    /// and the `cache` file where they were made from the same text under the same model, the
    /// rest asked of `embedder` a batch at a time (`progress` hears how many of how many).
    /// A failing server leaves the rest without vectors: they are found by keywords only, and
    /// the next update asks again.
    pub fn embed(
        &self,
        embedder: Arc<Embedder>,
        cache: Option<&Path>,
        previous: Option<&Vectors>,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Filled, IndexError> {
        let identity = embedder.identity();
        // The rows of documents the operator's rules hide get no vector: their text never
        // goes to the embedding server (each document asked once).
        let rows: Vec<(i64, String)> = {
            let conn = self.reader();
            let mut stmt = conn.prepare("SELECT rowid, hash, path FROM sections ORDER BY rowid")?;
            let mut hidden: HashMap<String, bool> = HashMap::new();
            let mut rows = Vec::new();
            for row in
                stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?)))?
            {
                let (rowid, hash, path) = row?;
                let hides = match hidden.get(&path) {
                    Some(&known) => known,
                    None => {
                        let hides = self.hidden.hides(&path);
                        hidden.insert(path, hides);
                        hides
                    }
                };
                if !hides {
                    rows.push((rowid, hash));
                }
            }
            rows
        };
        let wanted: HashSet<&str> = rows.iter().map(|(_, h)| h.as_str()).collect();
        let mut known: HashMap<String, Vec<f32>> = match previous {
            Some(previous) => previous
                .by_hash()
                .into_iter()
                .filter(|(h, _)| wanted.contains(h))
                .map(|(h, v)| (h.to_string(), v.to_vec()))
                .collect(),
            None => HashMap::new(),
        };
        // A cache that cannot be used costs time, never search: the vectors are made without it.
        let mut cache_warning = None;
        let mut unusable = |file: &Path, e: IndexError| {
            cache_warning = Some(format!(
                "the vector cache {} cannot be used ({e}); sections are embedded without it: delete the file, \
                 or make its folder writable",
                file.display()
            ));
        };
        let mut cache = match cache.map(|file| (file, Cache::open(file))) {
            Some((_, Ok(cache))) => Some(cache),
            Some((file, Err(e))) => {
                unusable(file, e);
                None
            }
            None => None,
        };
        if let Some(open) = &cache {
            let unknown: HashSet<&str> = wanted.iter().copied().filter(|h| !known.contains_key(*h)).collect();
            let loaded = if unknown.is_empty() { Ok(HashMap::new()) } else { open.load(&identity, &unknown) };
            match loaded {
                Ok(found) => known.extend(found),
                Err(e) => {
                    unusable(&open.file, e);
                    cache = None;
                }
            }
        }
        // Each text not known yet, once, with the first row that holds it.
        let mut todo: Vec<(i64, &str)> = Vec::new();
        let mut queued: HashSet<&str> = HashSet::new();
        for (row, hash) in &rows {
            if !known.contains_key(hash) && queued.insert(hash) {
                todo.push((*row, hash));
            }
        }
        let mut failure = None;
        let mut embedded = 0;
        progress(0, todo.len());
        for batch in todo.chunks(embedder.batch()) {
            let texts: Vec<String> = {
                let conn = self.reader();
                let mut stmt = conn.prepare_cached("SELECT heading, body FROM sections WHERE rowid = ?1")?;
                batch
                    .iter()
                    .map(|(row, _)| {
                        stmt.query_row(params![row], |r| {
                            Ok(passage_text(&r.get::<_, String>(0)?, &r.get::<_, String>(1)?))
                        })
                    })
                    .collect::<Result<_, _>>()?
            };
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            let hashes: Vec<&str> = batch.iter().map(|(_, hash)| *hash).collect();
            // A batch the server refuses (not a passing failure) is sent a text at a time, so
            // one text it will not take leaves only that section without a vector.
            let accepted: Vec<(&str, Vec<f32>)> = match embedder.passages(&texts) {
                Ok(vectors) => hashes.into_iter().zip(vectors).collect(),
                Err(e) if e.transient || texts.len() == 1 => {
                    failure = Some(e);
                    break;
                }
                Err(_) => {
                    let mut one_by_one = Vec::new();
                    for (hash, text) in hashes.into_iter().zip(&texts) {
                        match embedder.passages(&[text]) {
                            Ok(mut v) => one_by_one.extend(v.pop().map(|v| (hash, v))),
                            Err(e) => {
                                let passing = e.transient;
                                failure = Some(e);
                                if passing {
                                    break;
                                }
                            }
                        }
                    }
                    one_by_one
                }
            };
            if let Some(open) = &mut cache {
                let items: Vec<(&str, &[f32])> = accepted.iter().map(|(hash, v)| (*hash, v.as_slice())).collect();
                if let Err(e) = open.put(&identity, &items) {
                    unusable(&open.file.clone(), e);
                    cache = None;
                }
            }
            for (hash, vector) in accepted {
                known.insert(hash.to_string(), vector);
            }
            if failure.as_ref().is_some_and(|e| e.transient) {
                break;
            }
            embedded += batch.len();
            progress(embedded, todo.len());
        }
        progress(todo.len(), todo.len());
        let vectors = assemble(&rows, &known);
        Ok(Filled { semantic: Semantic { embedder, vectors }, embedded, failure, cache_warning })
    }
}

/// The vectors of `rows` that are `known`, in one block; rows without one, or with one of
/// another length than the first (a model changed behind the same name), are counted missing.
fn assemble(rows: &[(i64, String)], known: &HashMap<String, Vec<f32>>) -> Vectors {
    let dims = rows.iter().find_map(|(_, h)| known.get(h)).map_or(0, Vec::len);
    let mut vectors = Vectors { dims, ..Vectors::default() };
    for (row, hash) in rows {
        match known.get(hash).filter(|v| v.len() == dims && dims > 0) {
            Some(vector) => {
                vectors.data.extend_from_slice(vector);
                vectors.rows.push(*row);
                vectors.hashes.push(hash.clone());
            }
            None => vectors.missing += 1,
        }
    }
    vectors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn the_nearest_rows_come_best_first_and_n_bounds_them() {
        let rows: Vec<(i64, String)> = (1..=4).map(|i| (i * 10, format!("h{i}"))).collect();
        let known: HashMap<String, Vec<f32>> = [
            ("h1", unit(&[1.0, 0.0, 0.0])),
            ("h2", unit(&[0.0, 1.0, 0.0])),
            ("h3", unit(&[1.0, 1.0, 0.0])),
            ("h4", vec![1.0, 0.0]),
        ]
        .into_iter()
        .map(|(h, v)| (h.to_string(), v))
        .collect();
        let vectors = assemble(&rows, &known);
        assert_eq!((vectors.len(), vectors.missing), (3, 1), "a vector of another length is missing");
        let near = vectors.nearest(&unit(&[1.0, 0.2, 0.0]), 2);
        assert_eq!(near.iter().map(|(r, _)| *r).collect::<Vec<_>>(), [10, 30]);
        assert!(near[0].1 > near[1].1);
        assert_eq!(vectors.nearest(&unit(&[0.0, 1.0, 0.0]), 10).len(), 3);
        assert!(vectors.nearest(&[1.0, 0.0], 3).is_empty(), "a query of another length finds nothing");
    }

    #[test]
    fn a_row_that_stands_out_from_the_crowd_is_said_by_how_far() {
        // Nine rows alike and one the question points at.
        let mut rows = Vec::new();
        let mut known = HashMap::new();
        for i in 0..10_i64 {
            let v = if i == 7 { unit(&[1.0, 0.0, 0.0]) } else { unit(&[0.1, 1.0, 0.05 * i as f32]) };
            rows.push((i, format!("h{i}")));
            known.insert(format!("h{i}"), v);
        }
        let vectors = assemble(&rows, &known);
        let near = vectors.scan(&unit(&[1.0, 0.1, 0.0]), 3);
        assert_eq!(near.rows.first().map(|r| r.0), Some(7));
        let best = near.standing(f64::from(near.rows[0].1));
        let second = near.standing(f64::from(near.rows[1].1));
        assert!(best > 2.5, "the outlier stands {best} deviations out");
        assert!(second < 0.5, "the crowd stands near its mean: {second}");
        // Rows all alike do not spread: nothing stands out.
        let flat = Near { rows: Vec::new(), mean: 0.5, spread: 0.0 };
        assert_eq!(flat.standing(0.9), 0.0);
    }

    #[test]
    fn the_dot_product_counts_every_dimension() {
        let a: Vec<f32> = (0..19).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..19).map(|i| (i % 3) as f32).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert_eq!(dot(&a, &b), plain);
    }

    #[test]
    fn bytes_round_trip_and_the_cache_file_sits_beside_the_index() {
        let v = vec![0.5f32, -1.25, 3.0];
        assert_eq!(from_bytes(&to_bytes(&v)), v);
        assert_eq!(cache_path(Path::new("/d/.docs-agent/index.db")), Path::new("/d/.docs-agent/index.vectors.db"));
    }
}
