//! File descriptors: the soft `nofile` limit is raised to the hard one at start, and a run
//! whose clients need more connections than that is warned about before it starts (those
//! connects fail as `local_fd_limit`, a generator-side error, not the target's).

use barrage_plan::{Admission, ConnectionModel, Plan};

/// Descriptors kept for everything but connections (stdio, results files, epoll, threads).
const RESERVED: u64 = 64;

/// Raises the soft open-files limit as far as the hard limit allows; the limit now in force.
pub fn raise() -> Option<u64> {
    rlimit::increase_nofile_limit(u64::MAX).ok()
}

/// Connections the plan may hold open at once, when its model bounds them.
fn connections_needed(plan: &Plan) -> Option<u64> {
    let clients = match plan.workload.admission {
        Admission::PerArrival { max_clients } => max_clients?,
        _ => plan.workload.vus()?,
    };
    Some(match plan.options.connections.model {
        ConnectionModel::Shared => {
            let threads = plan.options.threads.unwrap_or(1) as u64;
            clients.min(u64::from(plan.options.connections.pool_size) * threads)
        }
        _ => clients,
    })
}

/// A warning when the plan's clients need more descriptors than `limit` leaves.
pub fn warning(plan: &Plan, limit: u64) -> Option<String> {
    warning_for(connections_needed(plan)?, limit)
}

fn warning_for(needed: u64, limit: u64) -> Option<String> {
    let available = limit.saturating_sub(RESERVED);
    (needed > available).then(|| {
        format!(
            "warning: {needed} clients need up to {needed} connections, but this process may open only about {available} (ulimit -n {limit}); connects beyond that fail as local_fd_limit. Raise the hard limit (ulimit -Hn) or use fewer clients"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warns_only_when_clients_exceed_the_limit() {
        let text = warning_for(1_000_000, 20_000).expect("a warning");
        assert!(
            text.contains("1000000 clients") && text.contains("local_fd_limit"),
            "{text}"
        );
        assert_eq!(warning_for(100, 20_000), None);
        assert!(raise().is_some_and(|limit| limit > 0));
    }
}
