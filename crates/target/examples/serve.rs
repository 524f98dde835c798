//! Example: run the test server in the foreground (`serve [ADDR] [THREADS]`) until Ctrl-C.

use barrage_target::{serve_blocking, TargetConfig};

fn main() {
    let mut args = std::env::args().skip(1);
    let mut config = TargetConfig::default();
    if let Some(addr) = args.next() {
        config.listen = addr.parse().unwrap_or_else(|e| {
            eprintln!("bad address {addr:?}: {e}");
            std::process::exit(2)
        });
    }
    if let Some(threads) = args.next() {
        config.threads = Some(threads.parse().unwrap_or_else(|e| {
            eprintln!("bad thread count {threads:?}: {e}");
            std::process::exit(2)
        }));
    }
    let result = serve_blocking(config, |addr| println!("listening on http://{addr}"));
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
