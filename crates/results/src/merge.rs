//! `barrage merge`: several results files of the same plan (e.g. from several machines) into
//! one whose figures equal those of a single run that did all the work — histograms add
//! bucket by bucket, counters add, nothing is averaged — and whose per-second series are
//! on one wall clock: a second's counts are those of every part in that wall-clock second.

use crate::{ResultsError, ResultsFile};
use std::borrow::Cow;

const SECOND_NS: u64 = 1_000_000_000;

/// The per-second series keep a day (like a single run's), so the parts must lie within it.
const LONGEST_SPAN_NS: u64 = 86_400 * SECOND_NS;

/// Merges `parts` (named by `names`, recorded in the result). The metadata is the first
/// part's, with the time span covering all parts, threads added, and interrupted if any was.
/// Each part's per-second figures move to the wall-clock second they happened in, counted
/// from the earliest start: a part that started 1.4 s after it has its second 0 in the
/// merged second 1 (its start rounded to the nearest whole second of the merged clock; with
/// `--start-at` the parts start within milliseconds of each other). VU and active-client
/// gauges add up per wall-clock second. Thresholds and self-check verdicts belong to single
/// runs, so the result has none of them (reports evaluate them on the merged data).
pub fn merge(parts: &[ResultsFile], names: &[String]) -> Result<ResultsFile, ResultsError> {
    if parts.is_empty() {
        return Err(ResultsError::Incompatible("no files to merge".into()));
    }
    check_segments(parts, names)?;
    let delays = wall_clock_delays(parts, names)?;
    let on_merged_clock = |i: usize| -> Cow<'_, ResultsFile> {
        if delays[i] == 0 {
            return Cow::Borrowed(&parts[i]);
        }
        let mut part = parts[i].clone();
        part.metrics.delay_seconds(delays[i]);
        if let Some(active) = &mut part.active_clients {
            active.splice(0..0, std::iter::repeat_n(0, delays[i]));
        }
        Cow::Owned(part)
    };
    let first = on_merged_clock(0).into_owned();
    let mut merged = ResultsFile {
        thresholds: None,
        self_check: None,
        // A capacity search's steps are merged by `barrage_capacity::file::merge`.
        capacity: None,
        ..first
    };
    for i in 1..parts.len() {
        let part = on_merged_clock(i);
        merge_part(&mut merged, &part, names, i)?;
    }
    finish_meta(&mut merged, parts, names);
    Ok(merged)
}

/// How many whole seconds each part's clock starts after the earliest part's (rounded to
/// the nearest second); refuses parts further apart than the series can hold.
fn wall_clock_delays(parts: &[ResultsFile], names: &[String]) -> Result<Vec<usize>, ResultsError> {
    let name = |i: usize| names.get(i).map_or("a file", String::as_str).to_string();
    let earliest = (0..parts.len())
        .min_by_key(|&i| parts[i].meta.started_at_unix_ns)
        .unwrap_or(0);
    let origin = parts[earliest].meta.started_at_unix_ns;
    parts
        .iter()
        .enumerate()
        .map(|(i, part)| {
            let end = part.meta.ended_at_unix_ns.max(part.meta.started_at_unix_ns);
            if end - origin > LONGEST_SPAN_NS {
                return Err(ResultsError::Incompatible(format!(
                    "{} ends {} h after {} started; a merged run's per-second series cover at most a day (merge runs that ran at the same time)",
                    name(i),
                    (end - origin) / (3600 * SECOND_NS),
                    name(earliest)
                )));
            }
            let late = part.meta.started_at_unix_ns - origin;
            Ok(((late + SECOND_NS / 2) / SECOND_NS) as usize)
        })
        .collect()
}

/// Adds one part (already on the merged clock) into `merged`.
fn merge_part(
    merged: &mut ResultsFile,
    part: &ResultsFile,
    names: &[String],
    i: usize,
) -> Result<(), ResultsError> {
    let name = |i: usize| names.get(i).map_or("a file", String::as_str);
    let first = &merged.meta;
    if part.meta.tags != first.tags {
        return Err(ResultsError::Incompatible(format!(
            "{} has tags {:?}, {} has {:?} (not the same plan)",
            name(i),
            part.meta.tags,
            name(0),
            first.tags
        )));
    }
    let check_names = |f: &ResultsFile| -> Vec<String> {
        f.metrics.checks.iter().map(|c| c.name.clone()).collect()
    };
    if check_names(part) != check_names(merged) {
        return Err(ResultsError::Incompatible(format!(
            "{} has other checks than {} (not the same plan)",
            name(i),
            name(0)
        )));
    }
    merged.metrics.merge(&part.metrics);
    merged.active_clients = match (merged.active_clients.take(), &part.active_clients) {
        (Some(mut mine), Some(theirs)) => {
            if mine.len() < theirs.len() {
                mine.resize(theirs.len(), 0);
            }
            mine.iter_mut().zip(theirs).for_each(|(m, t)| *m += t);
            Some(mine)
        }
        // A part without the gauge: no sum is the whole run's.
        _ => None,
    };
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
    Ok(())
}

/// The merged run's span, sources and, for segments, how their starts lined up.
fn finish_meta(merged: &mut ResultsFile, parts: &[ResultsFile], names: &[String]) {
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
    if parts[0].meta.segment.is_some() {
        let starts = parts.iter().map(|p| p.meta.started_at_unix_ns);
        let spread = starts.clone().max().unwrap_or(0) - starts.min().unwrap_or(0);
        m.segments = Some(crate::MergedSegments {
            count: parts.len() as u64,
            untrustworthy: Vec::new(),
            start_spread_ns: spread,
        });
        m.segment = None;
        // A merge is one run of the whole test: its plan is the segments' without what
        // belonged to each segment's machine.
        without_machine_options(&mut m.plan);
    }
}

/// The plan a segment ran, without what belongs to its machine rather than to the test: its
/// segment, and the source addresses it spread its connections over (`--local-addrs`; each
/// generator has its own). What every segment of one test shares.
fn plan_of_test(file: &ResultsFile) -> barrage_plan::Plan {
    let mut plan = file.meta.plan.clone();
    without_machine_options(&mut plan);
    plan
}

fn without_machine_options(plan: &mut barrage_plan::Plan) {
    plan.options.segment = None;
    plan.options.connections.local_addrs.clear();
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
