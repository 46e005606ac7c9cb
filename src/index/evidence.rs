//! Evidence for a question: from the best sections of several files, the passages that bear on
//! it, within a small budget, each labelled by its section's heading path. A small model reads
//! what answers the question and little else: prompt size is the latency on a CPU, and a
//! page of loosely related text is where a 1.5B model picks the wrong fact.
//!
//! Passages ([`passage`]) are scored by the question's words they hold, each weighed by how
//! rare it is in the docs (BM25's idf, with its saturation and length norm), plus a share of
//! their neighbours' scores (the sentence before a number often names what it counts), of
//! their heading path's match and of their section's rank. Words are compared by the stems
//! FTS5's own tokenizer gives ([`super::stems`]), so "refunded" in a question finds "refunds"
//! in a passage exactly as search does.
//!
//! The evidence also says how much of the question it covers (`coverage`): the share of the
//! question's weight found in it. A question whose rare words are nowhere in the evidence is
//! one the docs most likely do not answer.

use std::collections::{HashMap, HashSet};

use rusqlite::Connection;

use super::passage::{self, Passage};
use super::{Hit, Index, IndexError};

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;
/// How much of its best neighbour's relevance a passage takes.
const NEIGHBOUR: f64 = 0.35;
/// How much its section's heading path adds to a passage (as a share of the question's weight
/// found in the heading).
const HEADING: f64 = 0.35;
/// How much its section's rank adds (the section's search score over the best one's).
const RANK: f64 = 0.25;
/// A passage whose own relevance is below this share of the best one's is not worth its
/// tokens, however good its neighbours or its section.
const RELATIVE_FLOOR: f64 = 0.3;
/// Bytes a fence, a number and a heading line add around each section's passages, beyond
/// the heading's and the source's own length (counted against the budget).
const ITEM_OVERHEAD: usize = 36;
/// The score a section of a searched file that the search did not return takes, as a share of
/// its file's best hit.
const FILE_SHARE: f64 = 0.5;
/// Sections read at most from one file besides its hits (an API reference can hold hundreds).
const MAX_FILE_SECTIONS: usize = 80;
/// Bytes of a section cut into passages at most.
const MAX_SECTION_BYTES: usize = 8_000;
/// The first passages of a section, which its heading path alone can make worth reading.
const LEAD: usize = 2;
/// Sections whose lead is read for their meaning alone, at most. Measured on both corpora's
/// questions (`bench/README.md`, "Hybrid search"): one gains less than two, and costs the ERP's
/// held-out half a gold section.
const NEAREST: usize = 2;
/// The standing (standard deviations above every section's mean similarity) a section needs to
/// be read for its meaning alone: a floor against a flat crowd, low enough for a docs set of a
/// few dozen sections (whose best cannot stand far out).
const MIN_STANDING: f64 = 2.5;
/// The relevance by the reranker at which a section's lead is read for its meaning alone,
/// besides the most relevant section's.
const MEANT_RELEVANCE: f64 = 0.5;
/// What joins two passages of one section that are not next to each other.
pub const GAP: &str = "\n\n…\n\n";

/// How much evidence to gather.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Sections searched for (from several files).
    pub sections: usize,
    /// Files of the best of them whose every section is read for passages.
    pub files: usize,
    /// Bytes of evidence at most: passages, their heading lines, sources and fences.
    pub bytes: usize,
    /// Sections the evidence may draw from at most.
    pub items: usize,
}

/// The passages of one section chosen as evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Workspace-relative file, e.g. `docs/refunds.md`.
    pub path: String,
    /// The section's anchor.
    pub anchor: String,
    /// Its heading path, "Refunds > Window": the label the passages are read under.
    pub heading: String,
    /// The chosen passages in their order in the section, joined (a gap as [`GAP`]).
    pub text: String,
    /// The best score among its passages.
    pub score: f64,
}

impl Item {
    /// `docs/refunds.md#window`.
    pub fn source(&self) -> String {
        super::source(&self.path, &self.anchor)
    }
}

/// The evidence for a question.
#[derive(Debug, Clone)]
pub struct Evidence {
    /// The sections it draws from, most relevant first.
    pub items: Vec<Item>,
    /// The share of the question's weight (its topical words by idf) that the evidence holds,
    /// 0 to 1.
    pub coverage: f64,
    /// The share of the question's weight (the same) that the docs hold anywhere, 0 to 1.
    pub known: f64,
    /// The best passage's own relevance: its words' weight over the question's.
    pub best: f64,
    /// Every section searched, best first.
    pub searched: Vec<Hit>,
    /// The question's topical words that no section of the docs holds, as asked: named in
    /// retrieve-first's weak-evidence line (the log, the trace) and by `search --evidence`,
    /// never in an answer.
    pub unknown: Vec<String>,
    /// Those of [`Self::unknown`] the question writes as names (`query::looks_named`: "PayPal",
    /// "SOC", "Salesforce" inside a sentence): a subject the docs never mention. Only they let
    /// `retrieval.min_known` call the question not covered; an everyday word the docs never use
    /// ("leftover", "lapse") is the asker's phrasing of something they may well cover.
    pub unknown_named: Vec<String>,
    /// With vectors: the section nearest the question's meaning, and how many standard
    /// deviations its similarity stands above every section's mean.
    pub nearest: Option<(String, f64)>,
    /// With a reranker that answered: the best relevance (0 to 1) among the sections the
    /// evidence reads (it always reads the most relevant one's lead, when it fits).
    pub relevance: Option<f64>,
    /// Whether the sections were reranked, and how it went.
    pub reranked: super::rerank::Reranked,
}

impl Default for Evidence {
    fn default() -> Evidence {
        Evidence {
            items: Vec::new(),
            coverage: 0.0,
            known: 0.0,
            best: 0.0,
            searched: Vec::new(),
            unknown: Vec::new(),
            unknown_named: Vec::new(),
            nearest: None,
            relevance: None,
            reranked: super::rerank::Reranked::Off,
        }
    }
}

impl Index {
    /// The evidence for `question` within `budget`.
    pub fn evidence(&self, question: &str, budget: Budget) -> Result<Evidence, IndexError> {
        self.evidence_with(question, budget, super::Rerank::Configured)
    }

    /// [`Index::evidence`] from a search reranked as `rerank` says (what `cargo bench --bench
    /// evidence` compares).
    pub fn evidence_with(&self, question: &str, budget: Budget, rerank: super::Rerank) -> Result<Evidence, IndexError> {
        let found = self.search_reranked(question, budget.sections, self.fusion(), rerank)?;
        let super::Found { hits: searched, standing, relevance, reranked } = found;
        let nearest = standing
            .iter()
            .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(a.0)))
            .map(|(source, z)| (source.clone(), *z));
        let best_relevance = relevance.values().copied().reduce(f64::max);
        let words: Vec<String> =
            super::query::terms(question).into_iter().filter(|w| !super::query::is_function_word(w)).collect();
        if searched.is_empty() || words.is_empty() {
            return Ok(Evidence { searched, nearest, relevance: best_relevance, reranked, ..Evidence::default() });
        }
        let hits = self.candidates(&searched, budget.files)?;
        let sections: Vec<Vec<Passage>> = hits.iter().map(|h| passage::passages(super::uncut(&h.excerpt))).collect();
        let conn = self.reader();
        // One stemming pass: the question's words, each of its topical ones, then each
        // heading, then each passage.
        let mut texts: Vec<&str> = Vec::new();
        let joined = words.join(" ");
        let topical: Vec<&str> = words.iter().map(String::as_str).filter(|w| is_topical(w)).collect();
        texts.push(&joined);
        texts.extend(topical.iter().copied());
        texts.extend(hits.iter().map(|h| h.heading.as_str()));
        for section in &sections {
            texts.extend(section.iter().map(|p| p.text.as_str()));
        }
        let stems = super::stems::stems(&conn, &texts)?;
        let question_stems: HashSet<&str> = stems[0].iter().map(String::as_str).collect();
        let (weights, known) = idf(&conn, &question_stems, self.stats.sections)?;
        drop(conn);
        let by_word = &stems[1..=topical.len()];
        let unknown: Vec<String> = topical
            .iter()
            .zip(by_word)
            .filter(|(_, word)| !word.is_empty() && word.iter().all(|stem| !known.contains(stem)))
            .map(|(w, _)| w.to_string())
            .collect();
        let topical = by_word.iter().flatten().cloned().collect();
        let (headings, passages) = stems[1 + by_word.len()..].split_at(hits.len());
        let stems = Stems { weights, known, topical, headings, passages };
        let standing: Vec<f64> = hits.iter().map(|h| standing.get(&h.source()).copied().unwrap_or(0.0)).collect();
        let relevant: Vec<Option<f64>> = hits.iter().map(|h| relevance.get(&h.source()).copied()).collect();
        let mut evidence = choose(&hits, &sections, &stems, &by_meaning(&standing, &relevant), budget);
        evidence.searched = searched;
        let named = super::query::named(question);
        evidence.unknown_named = unknown.iter().filter(|w| named.contains(w.as_str())).cloned().collect();
        evidence.unknown = unknown;
        evidence.nearest = nearest;
        // The relevance "not covered" weighs is of what the model reads.
        evidence.relevance =
            evidence.items.iter().filter_map(|item| relevance.get(&item.source()).copied()).reduce(f64::max);
        evidence.reranked = reranked;
        Ok(evidence)
    }

    /// The sections evidence is drawn from: every section of the files of the best hits (the
    /// passage that answers often sits in a section the search ranked lower, in a file it
    /// ranked high), then the other hits. A hit keeps its search score; another section of a
    /// file takes [`FILE_SHARE`] of its file's best.
    fn candidates(&self, hits: &[Hit], files: usize) -> Result<Vec<Hit>, IndexError> {
        let mut out: Vec<Hit> = Vec::new();
        let mut opened: Vec<&str> = Vec::new();
        for hit in hits {
            if opened.contains(&hit.path.as_str()) || opened.len() >= files {
                continue;
            }
            opened.push(&hit.path);
            let best = hits.iter().filter(|h| h.path == hit.path).map(|h| h.score).fold(0.0, f64::max);
            for (at, section) in self.sections_of(&hit.path)?.into_iter().enumerate() {
                let found = hits.iter().find(|h| h.path == hit.path && h.anchor == section.anchor);
                if at >= MAX_FILE_SECTIONS && found.is_none() {
                    continue;
                }
                // A hit is read wherever it sits in its file, and a long one around what the
                // search matched.
                let text = match found {
                    Some(h) if section.text.len() > MAX_SECTION_BYTES => h.excerpt.clone(),
                    _ => crate::guard::redact::floor_char_boundary(&section.text, MAX_SECTION_BYTES).to_string(),
                };
                out.push(Hit {
                    path: hit.path.clone(),
                    score: found.map_or(FILE_SHARE * best, |h| h.score),
                    anchor: section.anchor,
                    heading: section.heading,
                    lines: section.lines,
                    excerpt: text,
                });
            }
        }
        out.extend(hits.iter().filter(|h| !opened.contains(&h.path.as_str())).cloned());
        Ok(out)
    }
}

/// True for a word that says what a question is about: not everyday English ("long",
/// "happens", whose absence from the docs says nothing), and without a digit (an order
/// number, an amount, a date names one case of a topic, and the docs never hold it).
fn is_topical(word: &str) -> bool {
    !super::query::is_everyday(word) && !word.chars().any(|c| c.is_ascii_digit())
}

/// What scoring needs of the stems: each question stem's weight, and the stems of each
/// section's heading and of each passage (in the order of the sections' passages).
pub struct Stems<'a> {
    /// The question's stems and their idf.
    pub weights: HashMap<String, f64>,
    /// The question's stems that some section of the docs holds.
    pub known: HashSet<String>,
    /// The question's stems of its topical words ([`is_topical`]): what coverage weighs.
    pub topical: HashSet<String>,
    /// Stems of each section's heading path.
    pub headings: &'a [Vec<String>],
    /// Stems of each passage, every section's passages in turn.
    pub passages: &'a [Vec<String>],
}

/// One passage, scored.
struct Scored<'a> {
    /// Its section (an index into the hits).
    section: usize,
    /// Its place in the section.
    at: usize,
    /// The passage.
    passage: &'a Passage,
    /// Its own relevance: its words' weight over the question's.
    own: f64,
    /// The same, read with its heading path's words.
    labelled: f64,
    /// It is one of the first passages of its section.
    lead: bool,
    /// It is the lead of a section nearest the question by meaning ([`by_meaning`]).
    meant: bool,
    /// With its neighbours, heading and section rank.
    score: f64,
}

/// Scores every passage and chooses the best within `budget`. `nearest` are the sections
/// nearest the question by meaning ([`by_meaning`]): their leads are read even when they share
/// no word with the question (an answer put in other words).
pub fn choose(
    hits: &[Hit],
    sections: &[Vec<Passage>],
    stems: &Stems<'_>,
    nearest: &[usize],
    budget: Budget,
) -> Evidence {
    let total: f64 = stems.weights.values().sum();
    if total <= 0.0 {
        return Evidence::default();
    }
    let top = hits.iter().map(|h| h.score).fold(f64::MIN, f64::max).max(f64::MIN_POSITIVE);
    let lengths: Vec<usize> = stems.passages.iter().map(Vec::len).collect();
    let average = (lengths.iter().sum::<usize>() as f64 / lengths.len().max(1) as f64).max(1.0);
    let mut scored: Vec<Scored<'_>> = Vec::new();
    let mut offset = 0;
    for (s, section) in sections.iter().enumerate() {
        let heading = matched(&stems.weights, &stems.headings[s]) / total;
        let rank = (hits[s].score / top).clamp(0.0, 1.0);
        // Its own words, and under its heading path: a passage is read under its label, so
        // "what is in the onboarding integrations" finds the text of "Onboarding > Integrations".
        let own: Vec<f64> =
            (0..section.len()).map(|i| bm25(&stems.weights, &stems.passages[offset + i], average) / total).collect();
        let labelled: Vec<f64> = (0..section.len())
            .map(|i| {
                let mut words = stems.passages[offset + i].clone();
                words.extend(stems.headings[s].iter().cloned());
                bm25(&stems.weights, &words, average) / total
            })
            .collect();
        for (i, passage) in section.iter().enumerate() {
            let before = if i > 0 { labelled[i - 1] } else { 0.0 };
            let after = labelled.get(i + 1).copied().unwrap_or(0.0);
            let score = labelled[i] + NEIGHBOUR * before.max(after) + HEADING * heading + RANK * rank;
            let lead = i < LEAD;
            let meant = lead && nearest.contains(&s);
            let (own, labelled) = (own[i], labelled[i]);
            scored.push(Scored { section: s, at: i, passage, own, labelled, lead, meant, score });
        }
        offset += section.len();
    }
    let chosen = pick(hits, &mut scored, budget);
    // Coverage: the question's weight found in what was chosen, headings included.
    let mut found: HashSet<&str> = HashSet::new();
    let mut offsets = Vec::with_capacity(sections.len());
    let mut at = 0;
    for section in sections {
        offsets.push(at);
        at += section.len();
    }
    for &(s, i) in &chosen {
        found.extend(stems.passages[offsets[s] + i].iter().map(String::as_str));
        found.extend(stems.headings[s].iter().map(String::as_str));
    }
    // Coverage weighs the question's topical words only (everyday English says nothing of
    // its topic); a question of everyday words only is weighed whole.
    let gate: Vec<(&String, &f64)> =
        match stems.weights.iter().filter(|(w, _)| stems.topical.contains(*w)).collect::<Vec<_>>() {
            topical if !topical.is_empty() => topical,
            _ => stems.weights.iter().collect(),
        };
    let gate_total: f64 = gate.iter().map(|(_, v)| **v).sum::<f64>().max(f64::MIN_POSITIVE);
    // `+ 0.0`: an empty sum of floats is -0.0, which would print as "-0.00".
    let covered: f64 = gate.iter().filter(|(w, _)| found.contains(w.as_str())).map(|(_, v)| **v).sum::<f64>() + 0.0;
    let best = scored.iter().map(|s| s.own).fold(0.0, f64::max);
    let items = assemble(hits, sections, &chosen, &scored);
    let known: f64 = gate.iter().filter(|(w, _)| stems.known.contains(w.as_str())).map(|(_, v)| **v).sum::<f64>() + 0.0;
    Evidence { items, coverage: covered / gate_total, known: known / gate_total, best, ..Evidence::default() }
}

/// The passages chosen, as (section, place) pairs: best first, within the budget's bytes and
/// sections, none far below the best.
fn pick(hits: &[Hit], scored: &mut [Scored<'_>], budget: Budget) -> Vec<(usize, usize)> {
    // The leads of the sections nearest by meaning rank right after the best passage by words
    // (the scores sit close together: any lower, and a budget of a few passages never reaches
    // them; level with it, they would take the first place the model reads first).
    let top = scored.iter().map(|s| s.score).fold(0.0, f64::max);
    for candidate in scored.iter_mut() {
        if candidate.meant {
            candidate.score = candidate.score.max(top * (1.0 - 1e-9));
        }
    }
    scored.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.section.cmp(&b.section)).then(a.at.cmp(&b.at)));
    let best = scored.iter().map(|s| s.own).fold(0.0, f64::max);
    let best_labelled = scored.iter().map(|s| s.labelled).fold(0.0, f64::max);
    let floor = RELATIVE_FLOOR;
    let by_words = |c: &Scored<'_>| c.own > 0.0 && c.own >= floor * best;
    // Sections with a passage worth reading by its own words: their leads need no label.
    let worded: HashSet<usize> = scored.iter().filter(|c| by_words(c)).map(|c| c.section).collect();
    let mut used = 0;
    let mut chosen: Vec<(usize, usize)> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    let mut headers: HashSet<(usize, usize)> = HashSet::new();
    let place: HashMap<(usize, usize), &Scored<'_>> = scored.iter().map(|c| ((c.section, c.at), c)).collect();
    for candidate in scored.iter() {
        // Brought along already, with its lead-in or its listing.
        if chosen.contains(&(candidate.section, candidate.at)) {
            continue;
        }
        // Worth its tokens by its own words, or as the lead of a section only its heading names.
        let by_label = candidate.lead
            && !worded.contains(&candidate.section)
            && candidate.labelled > 0.0
            && candidate.labelled >= floor * best_labelled;
        if !(by_words(candidate) || by_label || candidate.meant) {
            continue;
        }
        let new_section = !open.contains(&candidate.section);
        if new_section && open.len() >= budget.items {
            continue;
        }
        let hit = &hits[candidate.section];
        let mut cost = candidate.passage.text.len() + 1;
        if new_section {
            cost += hit.heading.len() + hit.source().len() + ITEM_OVERHEAD;
        }
        let header_key = (candidate.section, candidate.passage.block);
        if let Some(header) = &candidate.passage.header
            && !headers.contains(&header_key)
        {
            cost += header.len() + 1;
        }
        if used + cost > budget.bytes && !chosen.is_empty() {
            continue;
        }
        used += cost;
        if candidate.passage.header.is_some() {
            headers.insert(header_key);
        }
        if new_section {
            open.push(candidate.section);
        }
        chosen.push((candidate.section, candidate.at));
        // What it introduces, or what introduces it, comes before any passage scored lower.
        let from = chosen.len() - 1;
        complete_lead_ins(&place, &mut chosen, from, &mut used, &mut headers, budget.bytes);
    }
    // What is left of the budget goes to the neighbours of what was chosen, in the same block
    // (the list's next step, the table's next row, the paragraph's next sentence), best first.
    let mut i = 0;
    while i < chosen.len() {
        let (section, at) = chosen[i];
        i += 1;
        let Some(block) = place.get(&(section, at)).map(|c| c.passage.block) else { continue };
        for next in [at.checked_sub(1), at.checked_add(1)].into_iter().flatten() {
            let Some(neighbour) = place.get(&(section, next)) else { continue };
            if neighbour.passage.block != block || chosen.contains(&(section, next)) {
                continue;
            }
            let cost = neighbour.passage.text.len() + 1;
            if used + cost <= budget.bytes {
                used += cost;
                chosen.push((section, next));
            }
        }
    }
    chosen
}

/// The passages chosen from `from` on: one that introduces a list, a table or code ("the
/// following versions:") comes with what it introduces: its passages in order while they fit
/// in `limit` bytes, cut from the far end, never from the middle (called as each passage is
/// chosen, so a listing comes before what scored lower). A lead-in none of whose listing fits is dropped, unless
/// it is the best passage, which always comes and then brings the listing's first passage too.
/// A chosen part of a listing brings the lead-in that introduces it, when it fits: "these are
/// not supported:" is what its items mean.
fn complete_lead_ins(
    place: &HashMap<(usize, usize), &Scored<'_>>,
    chosen: &mut Vec<(usize, usize)>,
    from: usize,
    used: &mut usize,
    headers: &mut HashSet<(usize, usize)>,
    limit: usize,
) {
    let cost_of = |passage: &Passage, s: usize, headers: &HashSet<(usize, usize)>| {
        let header = match &passage.header {
            Some(header) if !headers.contains(&(s, passage.block)) => header.len() + 1,
            _ => 0,
        };
        passage.text.len() + 1 + header
    };
    let mut i = from;
    while i < chosen.len() {
        let (s, at) = chosen[i];
        i += 1;
        let Some(lead) = place.get(&(s, at)).map(|c| c.passage) else { continue };
        if lead.is_listing() {
            // Its lead-in: the passage just before its block's first, when it introduces it.
            let first = (0..=at)
                .rev()
                .take_while(|&j| place.get(&(s, j)).is_some_and(|c| c.passage.block == lead.block))
                .last();
            let Some(before) = first.and_then(|f| f.checked_sub(1)) else { continue };
            if let Some(intro) = place.get(&(s, before)).map(|c| c.passage)
                && intro.introduces()
                && !chosen.contains(&(s, before))
                && *used + cost_of(intro, s, headers) <= limit
            {
                *used += cost_of(intro, s, headers);
                chosen.push((s, before));
            }
            continue;
        }
        if !lead.introduces() {
            continue;
        }
        let Some(block) = place.get(&(s, at + 1)).map(|c| c.passage).filter(|p| p.is_listing()).map(|p| p.block) else {
            continue;
        };
        let mut added = 0;
        let mut j = at + 1;
        while let Some(part) = place.get(&(s, j)).map(|c| c.passage).filter(|p| p.block == block && p.is_listing()) {
            if !chosen.contains(&(s, j)) {
                let cost = cost_of(part, s, headers);
                if *used + cost > limit && !(i == 1 && added == 0) {
                    break;
                }
                *used += cost;
                if part.header.is_some() {
                    headers.insert((s, block));
                }
                chosen.push((s, j));
            }
            added += 1;
            j += 1;
        }
        // A part of the listing chosen on its own (the one that brought this lead-in) keeps it.
        let listed = chosen
            .iter()
            .any(|&(cs, cj)| cs == s && cj > at && place.get(&(cs, cj)).is_some_and(|c| c.passage.block == block));
        if added == 0 && !listed && i > 1 {
            chosen.retain(|c| *c != (s, at));
            *used = used.saturating_sub(lead.text.len() + 1);
            i -= 1;
        }
    }
}

/// The chosen passages as items: sections in the order of their best passage, each section's
/// passages in their own order, a table's header before its first chosen row.
fn assemble(hits: &[Hit], sections: &[Vec<Passage>], chosen: &[(usize, usize)], scored: &[Scored<'_>]) -> Vec<Item> {
    let score_of = |s: usize, i: usize| scored.iter().find(|x| x.section == s && x.at == i).map_or(0.0, |x| x.score);
    let mut order: Vec<usize> = Vec::new();
    for &(s, _) in chosen {
        if !order.contains(&s) {
            order.push(s);
        }
    }
    order
        .into_iter()
        .map(|s| {
            let mut places: Vec<usize> = chosen.iter().filter(|(x, _)| *x == s).map(|(_, i)| *i).collect();
            places.sort_unstable();
            let mut text = String::new();
            let mut last: Option<usize> = None;
            for &i in &places {
                let passage = &sections[s][i];
                // Passages next to each other in one block (a list, a table, a paragraph's
                // sentences) go on the next line; a new block after a blank line, so the
                // Markdown reads as written (a table after a list is not the list's last line).
                match last {
                    None => {}
                    Some(l) if l + 1 == i && sections[s][l].block == passage.block => text.push('\n'),
                    Some(l) if l + 1 == i => text.push_str("\n\n"),
                    Some(_) => text.push_str(GAP),
                }
                let starts_table = last.is_none_or(|l| sections[s][l].block != passage.block || l + 1 != i);
                if let (Some(header), true) = (&passage.header, starts_table) {
                    text.push_str(header);
                    text.push('\n');
                }
                text.push_str(&passage.text);
                last = Some(i);
            }
            let hit = &hits[s];
            let score = places.iter().map(|&i| score_of(s, i)).fold(0.0, f64::max);
            Item { path: hit.path.clone(), anchor: hit.anchor.clone(), heading: hit.heading.clone(), text, score }
        })
        .collect()
}

/// The sections whose lead is read for their meaning alone, at most [`NEAREST`]: first those
/// the reranker found most relevant, at least [`MEANT_RELEVANCE`] (the most relevant one always:
/// what "not covered" weighs is read), then those whose `standing` by the question's vector
/// stands out most, at least [`MIN_STANDING`] standard deviations above the mean.
pub fn by_meaning(standing: &[f64], relevance: &[Option<f64>]) -> Vec<usize> {
    let mut relevant: Vec<(usize, f64)> = relevance.iter().enumerate().filter_map(|(s, r)| r.map(|r| (s, r))).collect();
    relevant.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut order: Vec<usize> = relevant
        .iter()
        .enumerate()
        .filter(|(i, (_, r))| *i == 0 || *r >= MEANT_RELEVANCE)
        .map(|(_, (s, _))| *s)
        .collect();
    order.truncate(NEAREST);
    let mut near: Vec<usize> = (0..standing.len()).filter(|&s| standing[s] >= MIN_STANDING).collect();
    near.sort_by(|&a, &b| standing[b].total_cmp(&standing[a]).then(a.cmp(&b)));
    for s in near {
        if order.len() < NEAREST && !order.contains(&s) {
            order.push(s);
        }
    }
    order
}

/// BM25 of one passage (its stems, one per word) for the weighted question stems.
fn bm25(weights: &HashMap<String, f64>, passage: &[String], average: f64) -> f64 {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for stem in passage {
        if weights.contains_key(stem) {
            *counts.entry(stem.as_str()).or_insert(0) += 1;
        }
    }
    let norm = K1 * (1.0 - B + B * passage.len() as f64 / average);
    counts
        .into_iter()
        .map(|(stem, tf)| {
            let tf = tf as f64;
            weights.get(stem).copied().unwrap_or(0.0) * tf * (K1 + 1.0) / (tf + norm) / (K1 + 1.0)
        })
        .sum()
}

/// The weight of the question stems found among `stems`.
fn matched(weights: &HashMap<String, f64>, stems: &[String]) -> f64 {
    let found: HashSet<&str> = stems.iter().map(String::as_str).collect();
    weights.iter().filter(|(w, _)| found.contains(w.as_str())).map(|(_, v)| v).sum()
}

/// Each question stem's idf, and the stems some section holds.
type Weights = (HashMap<String, f64>, HashSet<String>);

/// Each stem's idf over the index's `rows` sections: a stem found nowhere weighs most (it is
/// what the question asks that the docs may not hold); and the stems some section holds.
fn idf(conn: &Connection, stems: &HashSet<&str>, rows: usize) -> Result<Weights, IndexError> {
    let n = rows.max(1) as f64;
    let (mut out, mut known) = (HashMap::new(), HashSet::new());
    for stem in stems {
        let count = super::stems::sections_holding(conn, stem)?;
        if count > 0 {
            known.insert(stem.to_string());
        }
        let count = (count as f64).min(n);
        out.insert(stem.to_string(), (1.0 + (n - count + 0.5) / (count + 0.5)).ln());
    }
    Ok((out, known))
}

#[cfg(test)]
mod tests;
