//! `kafkabroker`: the test kit's Kafka-protocol broker (tansu behind the kit's relay, which any librdkafka can talk
//! to) as a process of its own, for `make bench-sinks`: prints `kafkabroker ready bootstrap=127.0.0.1:PORT` once it
//! answers, serves until SIGTERM/SIGINT, then stops tansu and exits 0. Exits 1 when tansu is missing.

use std::process::ExitCode;

use tokio::signal::unix::{SignalKind, signal};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Some(broker) = crawl_test_kit::kafka::Broker::start("kafkabroker") else {
        return ExitCode::FAILURE;
    };
    println!("kafkabroker ready bootstrap={}", broker.bootstrap());
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        eprintln!("kafkabroker: cannot install signal handlers");
        return ExitCode::FAILURE;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    drop(broker);
    ExitCode::SUCCESS
}
