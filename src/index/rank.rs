//! The last ranking steps: a tie-break for words found as written, and evidence from the
//! whole document. A section is scored by its own
//! BM25 plus a share of the best other section of its file among the candidates, so a section
//! in a document that matches the question well overall ranks above a lone hit elsewhere.
//! The share was chosen on the dev half of the question sets (`cargo bench --bench retrieval`).

use std::collections::HashMap;

use super::Hit;

/// How much the best other section of the same file adds to a section's score: on the dev
/// halves, 0.3 put the right ERP file first for 63% of the questions against 40% without it
/// (0.2: 50%, 0.5: 50%), and left the billing half about even.
pub const FILE_EVIDENCE: f64 = 0.3;

/// The best `k` of `sections` (one per section, best window first, scores higher-is-better),
/// each scored with its file's evidence (the score it then carries); ties keep BM25's order.
pub fn with_file_evidence(sections: Vec<Hit>, k: usize) -> Vec<Hit> {
    // The two best scores of each file.
    let mut best: HashMap<&str, (f64, f64)> = HashMap::new();
    for hit in &sections {
        let (top, second) = best.entry(hit.path.as_str()).or_insert((0.0, 0.0));
        if hit.score > *top {
            *second = *top;
            *top = hit.score;
        } else if hit.score > *second {
            *second = hit.score;
        }
    }
    let mut scored: Vec<(f64, usize)> = sections
        .iter()
        .enumerate()
        .map(|(i, hit)| {
            let (top, second) = best.get(hit.path.as_str()).copied().unwrap_or_default();
            let other = if hit.score >= top { second } else { top };
            (hit.score + FILE_EVIDENCE * other, i)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut slots: Vec<Option<Hit>> = sections.into_iter().map(Some).collect();
    // Each hit carries the score it is ranked by, so the scores read in order (and a fusion
    // that weighs them keeps this order).
    scored
        .into_iter()
        .take(k)
        .filter_map(|(score, i)| {
            let mut hit = slots.get_mut(i).and_then(Option::take)?;
            hit.score = score;
            Some(hit)
        })
        .collect()
}

/// How much a section's score grows when every term of the question is in it as written, not
/// only by its stem: a tie-break, so "refunded" asked puts "refunded" before "refunds" when
/// BM25 cannot tell them apart. On the dev halves, 0.05 left R@1 as it was and nudged MRR up
/// (polar 0.694 → 0.696, ERP 0.678 → 0.679); 0.3 and more cost the ERP half a tenth of its
/// R@1 (a share of the question's words is mostly what BM25 already counts).
pub const EXACT_TERMS: f64 = 0.05;

/// Raises each section's score by [`EXACT_TERMS`] times its share of `terms` found as whole
/// words in its heading and text.
pub fn with_exact_terms(sections: &mut [Hit], terms: &[String]) {
    if terms.is_empty() {
        return;
    }
    let mut found = vec![false; terms.len()];
    for hit in sections.iter_mut() {
        found.fill(false);
        let words =
            hit.heading.split(|c: char| !c.is_alphanumeric()).chain(hit.excerpt.split(|c: char| !c.is_alphanumeric()));
        for word in words.filter(|w| !w.is_empty()) {
            // A word is compared lower-cased, as it was read into a set before; an ASCII one
            // without allocating (this ran for every word of every hit of every search).
            let lowered = if word.is_ascii() { None } else { Some(word.to_lowercase()) };
            for (term, seen) in terms.iter().zip(found.iter_mut()).filter(|(_, seen)| !**seen) {
                *seen = match &lowered {
                    Some(lowered) => lowered == term,
                    None => {
                        word.len() == term.len()
                            && word.bytes().zip(term.bytes()).all(|(w, t)| w.to_ascii_lowercase() == t)
                    }
                };
            }
            if found.iter().all(|seen| *seen) {
                break;
            }
        }
        let exact = found.iter().filter(|seen| **seen).count();
        hit.score *= 1.0 + EXACT_TERMS * exact as f64 / terms.len() as f64;
    }
}

/// How the keyword list and the vector list become one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// Reciprocal rank fusion: each list gives a section `weight / (k + rank)`, rank from 1.
    Rrf {
        /// The damping constant (60 in the paper that proposed it).
        k: f64,
        /// What the vector list weighs beside the keyword list's 1.
        vector_weight: f64,
    },
    /// Each list's scores scaled to 0..1 over its candidates (best 1, worst 0; a section a
    /// list does not hold gets 0 from it), then `(1 - vector_weight) * keyword + vector_weight
    /// * vector`.
    Weighted {
        /// The vector list's share.
        vector_weight: f64,
    },
}

/// The fusion search uses unless `retrieval.embeddings.weight` says otherwise: a weighted sum,
/// half and half. On the dev halves (`cargo bench --bench retrieval`, three embedding models on
/// the billing docs, one on the ERP docs) it was never below the keywords alone, where
/// reciprocal rank fusion was below them on the billing docs with two of the three models.
pub const FUSION: Fusion = Fusion::Weighted { vector_weight: 0.5 };

/// The best `k` of two ranked lists of sections, `keyword` and `vector` (best first, one hit
/// per section each), fused by `fusion`. A hit keeps the keyword list's window when both hold
/// its section; its score is the fused one.
pub fn fuse(keyword: Vec<Hit>, vector: Vec<Hit>, fusion: Fusion, k: usize) -> Vec<Hit> {
    let scale = |hits: &[Hit]| {
        let top = hits.iter().map(|h| h.score).fold(f64::MIN, f64::max);
        let low = hits.iter().map(|h| h.score).fold(f64::MAX, f64::min);
        let span = (top - low).max(f64::EPSILON);
        hits.iter().map(|h| (h.score - low) / span).collect::<Vec<f64>>()
    };
    let (keyword_scaled, vector_scaled) = (scale(&keyword), scale(&vector));
    let mut fused: Vec<(f64, Hit)> = Vec::with_capacity(keyword.len() + vector.len());
    let mut at: HashMap<String, usize> = HashMap::new();
    let lists = [(keyword, keyword_scaled, false), (vector, vector_scaled, true)];
    for (hits, scaled, is_vector) in lists {
        for (rank, (hit, scaled)) in hits.into_iter().zip(scaled).enumerate() {
            let part = match fusion {
                Fusion::Rrf { k, vector_weight } => {
                    let weight = if is_vector { vector_weight } else { 1.0 };
                    weight / (k + rank as f64 + 1.0)
                }
                Fusion::Weighted { vector_weight } => {
                    let weight = if is_vector { vector_weight } else { 1.0 - vector_weight };
                    weight * scaled
                }
            };
            match at.get(&hit.source()) {
                Some(&i) => fused[i].0 += part,
                None => {
                    at.insert(hit.source(), fused.len());
                    fused.push((part, hit));
                }
            }
        }
    }
    // Ties keep the keyword list's order, then the vector list's.
    let mut order: Vec<usize> = (0..fused.len()).collect();
    order.sort_by(|&a, &b| fused[b].0.total_cmp(&fused[a].0).then(a.cmp(&b)));
    let mut slots: Vec<Option<(f64, Hit)>> = fused.into_iter().map(Some).collect();
    order
        .into_iter()
        .take(k)
        .filter_map(|i| slots[i].take())
        .map(|(score, mut hit)| {
            hit.score = score;
            hit
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(path: &str, anchor: &str, score: f64) -> Hit {
        Hit {
            path: path.into(),
            anchor: anchor.into(),
            heading: String::new(),
            score,
            lines: (1, 1),
            excerpt: String::new(),
        }
    }

    fn order(hits: &[Hit]) -> Vec<String> {
        hits.iter().map(Hit::source).collect()
    }

    #[test]
    fn a_section_of_a_document_that_matches_overall_beats_a_lone_hit() {
        let sections = vec![
            hit("docs/faq.md", "misc", 10.0),
            hit("docs/refunds.md", "window", 9.0),
            hit("docs/refunds.md", "exceptions", 8.0),
            hit("docs/other.md", "x", 1.0),
        ];
        let ranked = with_file_evidence(sections, 3);
        assert_eq!(order(&ranked), ["docs/refunds.md#window", "docs/refunds.md#exceptions", "docs/faq.md#misc"]);
        assert!(ranked.windows(2).all(|w| w[0].score >= w[1].score), "scores in the order ranked: {ranked:?}");
    }

    #[test]
    fn fusion_lifts_a_section_both_lists_hold_and_keeps_the_keyword_window() {
        let keyword = vec![hit("docs/a.md", "x", 9.0), hit("docs/b.md", "y", 8.0), hit("docs/c.md", "z", 1.0)];
        let mut from_vectors = hit("docs/b.md", "y", 0.9);
        from_vectors.excerpt = "the vector's window".into();
        let vector = vec![from_vectors, hit("docs/d.md", "w", 0.8)];
        for fusion in [FUSION, Fusion::Weighted { vector_weight: 0.5 }] {
            let fused = fuse(keyword.clone(), vector.clone(), fusion, 3);
            assert_eq!(order(&fused)[0], "docs/b.md#y", "{fusion:?}");
            assert_eq!(fused[0].excerpt, "", "the keyword list's window: {fusion:?}");
            assert_eq!(fused.len(), 3);
            assert!(fused.windows(2).all(|w| w[0].score >= w[1].score));
        }
        let only_keywords = fuse(keyword.clone(), Vec::new(), FUSION, 5);
        assert_eq!(order(&only_keywords), order(&keyword), "no vectors: the keyword order");
    }

    #[test]
    fn a_far_better_lone_hit_still_wins_and_k_bounds_the_list() {
        let sections = vec![hit("docs/a.md", "x", 20.0), hit("docs/b.md", "y", 5.0), hit("docs/b.md", "z", 4.0)];
        assert_eq!(order(&with_file_evidence(sections.clone(), 1)), ["docs/a.md#x"]);
        assert_eq!(with_file_evidence(sections, 10).len(), 3);
        assert!(with_file_evidence(Vec::new(), 5).is_empty());
    }

    /// The words read as a set, lower-cased: what `with_exact_terms` did before it compared
    /// words in place, kept as the oracle.
    fn exact_terms_as_a_set(sections: &mut [Hit], terms: &[String]) {
        for hit in sections.iter_mut() {
            let words: std::collections::HashSet<String> = hit
                .heading
                .split(|c: char| !c.is_alphanumeric())
                .chain(hit.excerpt.split(|c: char| !c.is_alphanumeric()))
                .filter(|w| !w.is_empty())
                .map(str::to_lowercase)
                .collect();
            let exact = terms.iter().filter(|t| words.contains(t.as_str())).count();
            hit.score *= 1.0 + EXACT_TERMS * exact as f64 / terms.len() as f64;
        }
    }

    #[test]
    fn exact_terms_count_as_the_set_of_lower_cased_words_counts_them() {
        let texts = [
            ("Refund window", "Refunds are REFUNDED within 14 days. Ärger über Straße; ÉLAN"),
            ("", "refund-window refund_window refundwindow"),
            ("İstanbul office", "Zahlung ÄRGER ärger straße STRASSE café CAFÉ"),
            ("Nothing", ""),
        ];
        let term_sets: [&[&str]; 5] = [
            &["refund", "window"],
            &["ärger", "straße", "élan"],
            &["café", "istanbul", "i̇stanbul", "strasse"],
            &["Refund", "14"],
            &["days", "refunded", "missing"],
        ];
        for terms in term_sets {
            let terms: Vec<String> = terms.iter().map(|t| t.to_string()).collect();
            let mut ours: Vec<Hit> = texts
                .iter()
                .map(|(h, e)| Hit { heading: h.to_string(), excerpt: e.to_string(), ..hit("docs/a.md", "a", 1.0) })
                .collect();
            let mut oracle = ours.clone();
            with_exact_terms(&mut ours, &terms);
            exact_terms_as_a_set(&mut oracle, &terms);
            let scores = |hits: &[Hit]| hits.iter().map(|h| h.score).collect::<Vec<_>>();
            assert_eq!(scores(&ours), scores(&oracle), "terms {terms:?}");
        }
    }
}
