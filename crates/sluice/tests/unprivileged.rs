//! `sluice run` as an unprivileged user with only the capabilities the
//! systemd unit grants (`packaging/sluice.service`: `DynamicUser=yes`,
//! ambient `CAP_NET_RAW CAP_NET_ADMIN`): the switch starts, makes its
//! control socket in a run directory that user owns, forwards ping between
//! two hosts in namespaces over AF_PACKET ports, answers `sluice ctl`, and
//! reports a `ctl reload` sent by the same user. Without the capabilities
//! the same command fails naming the permission problem.
//!
//! `setpriv` (util-linux) stands in for systemd, which is not PID 1 on the
//! test machines. Needs root, `ip`, `ping`, `setpriv`.

mod netlab;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

use netlab::{need_root_and, Lab, Proc, Scratch};

/// The uid/gid the switch runs as (`nobody`: no files, no groups).
const NOBODY: u32 = 65534;

/// A copy of the binary under test that `nobody` may execute (the build
/// directory's parents need not be searchable by others).
fn binary_for_nobody(dir: &Scratch) -> std::path::PathBuf {
    let bin = dir.path("sluice");
    std::fs::copy(env!("CARGO_BIN_EXE_sluice"), &bin).expect("copy the binary");
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut p = dir.0.clone();
    while p.pop() {
        let mode = std::fs::metadata(&p).map(|m| m.permissions().mode()).unwrap_or(0);
        assert!(mode & 0o001 != 0, "{} is not searchable by others", p.display());
    }
    bin
}

/// `sluice ARGS` as `nobody` in the switch namespace, with `caps` as the
/// inheritable, ambient and bounding set (`setpriv` syntax, e.g.
/// `+net_raw,+net_admin`, or `-all`).
fn as_nobody(lab: &Lab, bin: &std::path::Path, caps: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", lab.sw.name(), "setpriv"])
        .arg(format!("--reuid={NOBODY}"))
        .arg(format!("--regid={NOBODY}"))
        .arg("--clear-groups")
        .arg(format!("--inh-caps={caps}"))
        .arg(format!("--ambient-caps={caps}"))
        .arg(format!("--bounding-set={}", if caps == "-all" { "-all" } else { caps }))
        .arg("--")
        .arg(bin)
        .args(args)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1");
    cmd
}

#[test]
fn runs_as_nobody_with_the_units_capabilities_and_forwards() {
    need_root_and(&["ip", "ping", "setpriv"]);
    let dir = Scratch::new("unpriv");
    std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let bin = binary_for_nobody(&dir);
    let rundir = dir.path("run");
    std::fs::create_dir(&rundir).expect("run directory");
    std::os::unix::fs::chown(&rundir, Some(NOBODY), Some(NOBODY)).expect("chown run directory");
    let conf = dir.path("sluice.toml");
    let lab = Lab::new(2, 63);
    let ports: String = lab
        .sw_if
        .iter()
        .enumerate()
        .map(|(i, n)| format!("[[port]]\nspec = \"afpacket:{n}={}\"\n", i + 1))
        .collect();
    std::fs::write(&conf, format!("fail_mode = \"standalone\"\n{ports}")).expect("config");
    let conf_s = conf.to_str().unwrap();
    let rundir_s = rundir.to_str().unwrap();

    // Without capabilities: refused, and the error says why.
    let out = as_nobody(&lab, &bin, "-all", &["run", "--config", conf_s, "--rundir", rundir_s])
        .output()
        .expect("run setpriv");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "started without CAP_NET_RAW:\n{err}");
    assert!(
        err.contains("ermission") || err.contains("EPERM") || err.contains("not permitted"),
        "no permission error named:\n{err}"
    );

    // With the unit's two capabilities: runs, forwards, answers ctl.
    let mut cmd = as_nobody(
        &lab,
        &bin,
        "+net_raw,+net_admin",
        &["run", "--config", conf_s, "--rundir", rundir_s, "--name", "up0"],
    );
    let mut sw = Proc::spawn("sluice run as nobody", &mut cmd, dir.path("sluice.log"));
    sw.wait_log("switch running", Duration::from_secs(30));
    let sock = rundir.join("up0.mgmt");
    let meta = std::fs::metadata(&sock).expect("control socket made");
    assert_eq!(std::os::unix::fs::MetadataExt::uid(&meta), NOBODY, "socket owner");
    assert!(lab.ping_ok_within(0, 1, Duration::from_secs(20)), "h0 cannot ping h1:\n{}", sw.log());
    let ping = lab.ping(1, 0, 3);
    assert!(ping.status.success(), "{}", String::from_utf8_lossy(&ping.stdout));

    // `ctl` (as root here) reads the ports over the socket.
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["ctl", "--rundir", rundir_s, "up0", "dump-ports"])
        .output()
        .expect("sluice ctl");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ctl dump-ports: {}", String::from_utf8_lossy(&out.stderr));
    let ports: Vec<u32> = text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("port"))
        .filter_map(|r| r.trim_start().split(':').next()?.trim().parse().ok())
        .collect();
    assert_eq!(ports, [1, 2], "{text}");

    // `ctl reload` as the same user (systemd's ExecReload runs as the
    // unit's user): SIGHUP is allowed and the outcome comes back.
    let out = as_nobody(&lab, &bin, "-all", &["ctl", "--rundir", rundir_s, "up0", "reload"])
        .output()
        .expect("ctl reload as nobody");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("reload applied"),
        "ctl reload as nobody:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    sw.assert_running();
}
