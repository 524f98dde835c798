//! Benchmark baseline: the same closed loop as `barrage quick`, but over hyper's HTTP/1.1
//! client connection instead of barrage's own. Used by bench/hyper-vs-own.sh to record why
//! barrage carries its own HTTP/1.1 client (see BENCHMARKS.md).
//!
//! Usage: hyper_baseline HOST:PORT PATH CONNECTIONS SECONDS
//! One thread, one current-thread runtime, like one barrage worker. Prints the responses.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: hyper_baseline HOST:PORT PATH CONNECTIONS SECONDS");
        std::process::exit(2);
    }
    let addr = args[1].clone();
    let path = args[2].clone();
    let connections: usize = args[3].parse().expect("CONNECTIONS");
    let seconds: u64 = args[4].parse().expect("SECONDS");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let local = tokio::task::LocalSet::new();
    let done = Rc::new(Cell::new(0u64));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    local.block_on(&runtime, async {
        let mut tasks = Vec::new();
        for _ in 0..connections {
            let (addr, path, done) = (addr.clone(), path.clone(), Rc::clone(&done));
            tasks.push(tokio::task::spawn_local(async move {
                let stream = tokio::net::TcpStream::connect(&addr)
                    .await
                    .expect("connect");
                stream.set_nodelay(true).expect("nodelay");
                let (mut sender, conn) =
                    hyper::client::conn::http1::handshake(TokioIo::new(stream))
                        .await
                        .expect("handshake");
                tokio::task::spawn_local(conn);
                while Instant::now() < deadline {
                    let request = hyper::Request::get(path.as_str())
                        .header("host", addr.as_str())
                        .body(Empty::<Bytes>::new())
                        .expect("request");
                    let response = sender.send_request(request).await.expect("send");
                    let _ = response.into_body().collect().await.expect("body");
                    done.set(done.get() + 1);
                }
            }));
        }
        for task in tasks {
            let _ = task.await;
        }
    });
    println!("{}", done.get());
}
