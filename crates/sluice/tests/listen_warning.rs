//! `sluice run` warns when its OpenFlow listener takes every address
//! without TLS (anyone who reaches the port controls the switch), and
//! stays quiet for a loopback listener. Two pcap ports, no root; the
//! switch is our child, stopped by PID on drop; the test connects over
//! loopback only.

mod pcap_switch;

use pcap_switch::PcapSwitch;

const WARNING: &str = "OpenFlow listener on every address without TLS";

/// The log, once the listener's readiness line is in it (bounded wait).
fn log_after_ready(sw: &PcapSwitch) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let log = std::fs::read_to_string(sw.log_path()).unwrap_or_default();
        if log.contains("OpenFlow listener ready") {
            return log;
        }
        assert!(std::time::Instant::now() < deadline, "no listener line in the log:\n{log}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn plain_tcp_on_every_address_is_a_warning() {
    let sw = PcapSwitch::start_on("listen-any", "0.0.0.0");
    let log = log_after_ready(&sw);
    let line = log.lines().find(|l| l.contains(WARNING)).unwrap_or_else(|| panic!("{log}"));
    assert!(line.contains("WARN") && line.contains(&sw.port.to_string()), "{line}");

    let sw = PcapSwitch::start("listen-lo");
    let log = log_after_ready(&sw);
    assert!(!log.contains(WARNING), "a loopback listener is not a warning:\n{log}");
}
