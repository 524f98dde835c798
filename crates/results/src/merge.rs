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
    check_segments(parts, names)?;
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
    if first.meta.segment.is_some() {
        let starts = parts.iter().map(|p| p.meta.started_at_unix_ns);
        let spread = starts.clone().max().unwrap_or(0) - starts.min().unwrap_or(0);
        m.segments = Some(crate::MergedSegments {
            count: parts.len() as u64,
            untrustworthy: Vec::new(),
            start_spread_ns: spread,
        });
        m.segment = None;
        // A merge is one run of the whole test: its plan is the segments' without the
        // segment.
        m.plan.options.segment = None;
    }
    Ok(merged)
}

/// The plan a segment ran, without its segment (what every segment of one test shares).
fn plan_of_test(file: &ResultsFile) -> barrage_plan::Plan {
    let mut plan = file.meta.plan.clone();
    plan.options.segment = None;
    plan
}

/// Segments merge only with segments of the same test: the same plan, the same number of
/// segments, each segment once.
fn check_segments(parts: &[ResultsFile], names: &[String]) -> Result<(), ResultsError> {
    let name = |i: usize| names.get(i).map_or("a file", String::as_str).to_string();
    let Some(first) = parts.iter().position(|p| p.meta.segment.is_some()) else {
        return Ok(());
    };
    let reference = parts[first].meta.segment.as_ref().map(|s| s.count);
    let plan = plan_of_test(&parts[first]);
    let mut seen: Vec<Option<usize>> = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let Some(segment) = &part.meta.segment else {
            return Err(ResultsError::Incompatible(format!(
                "{} is not a segment, {} is (merge the segments of one test)",
                name(i),
                name(first)
            )));
        };
        if Some(segment.count) != reference {
            return Err(ResultsError::Incompatible(format!(
                "{} is segment {}/{}, {} one of {:?} (segments of different splits)",
                name(i),
                segment.index,
                segment.count,
                name(first),
                reference.unwrap_or(0)
            )));
        }
        let points = |p: &ResultsFile| {
            p.meta
                .plan
                .options
                .segment
                .as_ref()
                .map(|s| s.points.clone())
        };
        if points(part) != points(&parts[first]) {
            return Err(ResultsError::Incompatible(format!(
                "{} and {} are segments of different sequences (--execution-segment-sequence)",
                name(i),
                name(first)
            )));
        }
        if plan_of_test(part) != plan {
            return Err(ResultsError::Incompatible(format!(
                "{} ran another plan than {} (not segments of one test)",
                name(i),
                name(first)
            )));
        }
        let index = segment.index as usize;
        if seen.len() <= index {
            seen.resize(index + 1, None);
        }
        if let Some(earlier) = seen[index] {
            return Err(ResultsError::Incompatible(format!(
                "{} and {} are both segment {}/{} (overlapping segments)",
                name(earlier),
                name(i),
                segment.index,
                segment.count
            )));
        }
        seen[index] = Some(i);
    }
    Ok(())
}
