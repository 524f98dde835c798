//! `barrage merge`: several results files of the same plan (e.g. from several machines) into
//! one whose figures equal those of a single run that did all the work — histograms add
//! bucket by bucket, counters add, nothing is averaged.

use crate::{ResultsError, ResultsFile};

/// Merges `parts` (named by `names`, recorded in the result). The metadata is the first
/// part's, with the time span covering all parts, threads added, and interrupted if any was.
/// Thresholds and self-check verdicts belong to single runs, and sampled active clients of
/// different machines do not add up exactly, so the result has none of them.
pub fn merge(parts: &[ResultsFile], names: &[String]) -> Result<ResultsFile, ResultsError> {
    let (first, rest) = parts
        .split_first()
        .ok_or_else(|| ResultsError::Incompatible("no files to merge".into()))?;
    let mut merged = ResultsFile {
        meta: first.meta.clone(),
        metrics: first.metrics.clone(),
        thresholds: None,
        self_check: None,
        // Samples of different machines were not taken at the same instants.
        active_clients: None,
    };
    for (i, part) in rest.iter().enumerate() {
        if part.meta.tags != first.meta.tags {
            return Err(ResultsError::Incompatible(format!(
                "{} has tags {:?}, {} has {:?} (not the same plan)",
                names.get(i + 1).map_or("a file", String::as_str),
                part.meta.tags,
                names.first().map_or("the first file", String::as_str),
                first.meta.tags
            )));
        }
        let check_names = |f: &ResultsFile| -> Vec<String> {
            f.metrics.checks.iter().map(|c| c.name.clone()).collect()
        };
        if check_names(part) != check_names(first) {
            return Err(ResultsError::Incompatible(format!(
                "{} has other checks than {} (not the same plan)",
                names.get(i + 1).map_or("a file", String::as_str),
                names.first().map_or("the first file", String::as_str)
            )));
        }
        merged.metrics.merge(&part.metrics);
        let m = &mut merged.meta;
        m.started_at_unix_ns = m.started_at_unix_ns.min(part.meta.started_at_unix_ns);
        m.ended_at_unix_ns = m.ended_at_unix_ns.max(part.meta.ended_at_unix_ns);
        m.threads += part.meta.threads;
        m.interrupted |= part.meta.interrupted;
        // Several runs sent ids with several prefixes: no one prefix joins them all.
        if m.request_id_prefix != part.meta.request_id_prefix {
            m.request_id_prefix = None;
        }
        if let (Some(mine), Some(theirs)) = (m.planned_arrivals, part.meta.planned_arrivals) {
            let add = |a: u64, b: u64| (f64::from_bits(a) + f64::from_bits(b)).to_bits();
            let max = |a: u64, b: u64| f64::from_bits(a).max(f64::from_bits(b)).to_bits();
            m.planned_arrivals = Some(crate::PlannedArrivalsBits {
                expected_f64_bits: add(mine.expected_f64_bits, theirs.expected_f64_bits),
                seconds_f64_bits: max(mine.seconds_f64_bits, theirs.seconds_f64_bits),
            });
        }
    }
    let m = &mut merged.meta;
    // Parts that ran side by side overlap; the merged run spans them all.
    let span = m.ended_at_unix_ns.saturating_sub(m.started_at_unix_ns);
    m.elapsed_ns = parts
        .iter()
        .map(|p| p.meta.elapsed_ns)
        .max()
        .unwrap_or(0)
        .max(span);
    m.merged_from = names.to_vec();
    Ok(merged)
}
