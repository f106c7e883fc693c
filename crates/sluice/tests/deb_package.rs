//! The Debian package: `scripts/build-deb` packages the binary this test
//! run built (no second build), then the package is checked the way a
//! packager and an operator would: `dpkg-deb --info/--contents`, `lintian`
//! (no errors, no warnings), installed with `dpkg --root` into a throwaway
//! root (the real system's package database is not touched), the installed
//! binary run, its man pages read with `man -l`, its systemd unit checked
//! with `systemd-analyze verify` (not started), then purged.
//!
//! Needs (scripts/install-deps installs them): dpkg-dev, lintian, man-db,
//! systemd (for systemd-analyze), binutils.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// A scratch directory removed on drop, even when an assertion fails.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root")
}

fn need(tool: &str, package: &str) {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(found, "'{tool}' not found: apt-get install {package} (or run scripts/install-deps)");
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(cmd: &mut Command) -> String {
    String::from_utf8_lossy(&run(cmd).stdout).into_owned()
}

/// `man -l PAGE` as plain text (overstrike bold/underline removed).
fn man_text(page: &Path) -> String {
    let out =
        run(Command::new("man").arg("-l").arg(page).env("MANWIDTH", "100").env("MANPAGER", "cat"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.trim().is_empty(), "man -l {}: {stderr}", page.display());
    let raw = String::from_utf8_lossy(&out.stdout);
    let mut text = String::new();
    for c in raw.chars() {
        if c == '\u{8}' {
            text.pop();
        } else {
            text.push(c);
        }
    }
    text
}

#[test]
fn deb_builds_installs_into_a_throwaway_root_runs_and_purges() {
    for (tool, package) in [
        ("dpkg-deb", "dpkg"),
        ("dpkg-shlibdeps", "dpkg-dev"),
        ("objcopy", "binutils"),
        ("lintian", "lintian"),
        ("man", "man-db"),
        ("systemd-analyze", "systemd"),
    ] {
        need(tool, package);
    }
    let host_has_sluice =
        Command::new("dpkg-query").args(["-W", "sluice"]).output().expect("dpkg-query");
    let tmp = TempDir(std::env::temp_dir().join(format!("sluice-pkgtest-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&tmp.0);
    std::fs::create_dir_all(&tmp.0).expect("temp dir");

    // Build from the binary cargo built for this test run.
    let out_dir = tmp.0.join("out");
    let built = stdout(
        Command::new(repo_root().join("scripts/build-deb"))
            .arg("--binary")
            .arg(SLUICE)
            .arg("--out")
            .arg(&out_dir),
    );
    let deb = PathBuf::from(built.lines().last().expect("build-deb prints the .deb path"));
    assert!(deb.starts_with(&out_dir) && deb.is_file(), "no package at {}", deb.display());

    // The control file.
    let info = stdout(Command::new("dpkg-deb").arg("--info").arg(&deb));
    for want in [
        "Package: sluice\n".to_string(),
        format!("Version: {VERSION}\n"),
        "Section: net\n".to_string(),
    ] {
        assert!(info.contains(&want), "dpkg-deb --info lacks {want:?}:\n{info}");
    }
    let depends = info.lines().find(|l| l.trim_start().starts_with("Depends:")).unwrap_or("");
    for lib in ["libc6", "libpcap0.8"] {
        assert!(depends.contains(lib), "Depends lacks {lib}: {depends:?}");
    }
    let conffiles = stdout(Command::new("dpkg-deb").arg("--info").arg(&deb).arg("conffiles"));
    assert_eq!(conffiles.trim(), "/etc/sluice/sluice.toml");

    // The contents: the binary, one man page per command, unit, config, docs.
    let pages_dir = tmp.0.join("pages");
    run(Command::new(SLUICE).arg("man").arg(&pages_dir));
    let mut pages: Vec<String> = std::fs::read_dir(&pages_dir)
        .expect("pages")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    assert!(pages.len() > 20, "only {} man pages: {pages:?}", pages.len());
    let contents = stdout(Command::new("dpkg-deb").arg("--contents").arg(&deb));
    let paths: Vec<&str> = contents.lines().filter_map(|l| l.split_whitespace().nth(5)).collect();
    let mut expected: Vec<String> = [
        "./usr/bin/sluice",
        "./lib/systemd/system/sluice.service",
        "./etc/sluice/sluice.toml",
        "./usr/share/bash-completion/completions/sluice",
        "./usr/share/doc/sluice/README.md.gz",
        "./usr/share/doc/sluice/copyright",
        "./usr/share/doc/sluice/changelog.gz",
        "./usr/share/doc/sluice/examples/afxdp.conf",
    ]
    .map(String::from)
    .to_vec();
    expected.extend(pages.iter().map(|p| format!("./usr/share/man/man1/{p}.gz")));
    for want in &expected {
        assert!(paths.contains(&want.as_str()), "package lacks {want}:\n{contents}");
    }
    assert!(
        contents
            .lines()
            .any(|l| l.starts_with("-rwxr-xr-x root/root") && l.ends_with("./usr/bin/sluice")),
        "usr/bin/sluice is not an executable owned by root:\n{contents}"
    );

    // lintian: no error and no warning.
    let lintian = Command::new("lintian")
        .args(["--fail-on", "error,warning", "--tag-display-limit", "0"])
        .arg(&deb)
        .output()
        .expect("run lintian");
    let report = String::from_utf8_lossy(&lintian.stdout);
    assert!(
        lintian.status.success()
            && !report.lines().any(|l| l.starts_with("E:") || l.starts_with("W:")),
        "lintian:\n{report}\n{}",
        String::from_utf8_lossy(&lintian.stderr)
    );

    // Install into a throwaway root with its own (empty) package database;
    // the libraries it depends on are the host's, so --force-depends.
    let root = tmp.0.join("root");
    for d in ["var/lib/dpkg/updates", "var/lib/dpkg/info", "var/log"] {
        std::fs::create_dir_all(root.join(d)).expect("dpkg admin dir");
    }
    for f in ["var/lib/dpkg/status", "var/lib/dpkg/available"] {
        std::fs::write(root.join(f), "").expect("dpkg status file");
    }
    let dpkg = |args: &[&str]| {
        let mut c = Command::new("dpkg");
        c.arg(format!("--root={}", root.display()))
            .arg(format!("--log={}", root.join("var/log/dpkg.log").display()))
            .args(args);
        c
    };
    run(dpkg(&["--force-depends", "-i"]).arg(&deb));
    let status = stdout(&mut dpkg(&["-s", "sluice"]));
    assert!(status.contains("Status: install ok installed"), "{status}");

    // The installed binary runs, and the packaged configuration is valid.
    let installed = root.join("usr/bin/sluice");
    assert_eq!(
        stdout(Command::new(&installed).arg("--version")).trim(),
        format!("sluice {VERSION}")
    );
    let checked = stdout(
        Command::new(&installed)
            .args(["run", "--check", "--config"])
            .arg(root.join("etc/sluice/sluice.toml")),
    );
    assert!(checked.contains("control socket: /run/sluice/br0.mgmt"), "{checked}");

    // Its man pages read as man pages.
    let man1 = root.join("usr/share/man/man1");
    let run_page = man_text(&man1.join("sluice-run.1.gz"));
    for want in ["SYNOPSIS", "--workers <N>", "Worker threads", "SEE ALSO", "sluice(1)"] {
        assert!(run_page.contains(want), "sluice-run(1) lacks {want:?}:\n{run_page}");
    }
    let ctl_page = man_text(&man1.join("sluice-ctl.1.gz"));
    assert!(
        ctl_page.lines().any(|l| l.trim_start().starts_with("dump-flows [FLOW]")),
        "sluice-ctl(1) lost the command list's lines:\n{ctl_page}"
    );
    let top_page = man_text(&man1.join("sluice.1.gz"));
    assert!(top_page.contains("/etc/sluice/sluice.toml"), "{top_page}");

    // The unit, checked (never started) against the installed tree. The
    // targets it pulls in are the host's units, copied into the root.
    std::fs::create_dir_all(root.join("usr/lib/systemd")).expect("usr/lib/systemd");
    run(Command::new("cp")
        .arg("-a")
        .arg("/usr/lib/systemd/system")
        .arg(root.join("usr/lib/systemd/system")));
    let verify = Command::new("systemd-analyze")
        .arg("verify")
        .arg(format!("--root={}", root.display()))
        .arg("sluice.service")
        .env("MANPATH", root.join("usr/share/man"))
        .output()
        .expect("run systemd-analyze");
    let complaints = String::from_utf8_lossy(&verify.stderr);
    assert!(
        verify.status.success() && complaints.trim().is_empty(),
        "systemd-analyze verify sluice.service ({}):\n{complaints}",
        verify.status
    );

    // Purge: everything the package brought, configuration included, goes.
    run(&mut dpkg(&["--purge", "sluice"]));
    for gone in ["usr/bin/sluice", "etc/sluice/sluice.toml", "lib/systemd/system/sluice.service"] {
        assert!(!root.join(gone).exists(), "{gone} is still there after --purge");
    }
    assert!(!man1.join("sluice-run.1.gz").exists(), "man pages left after --purge");

    // The host's package database did not change.
    let host_after =
        Command::new("dpkg-query").args(["-W", "sluice"]).output().expect("dpkg-query");
    assert_eq!(host_has_sluice.status.success(), host_after.status.success());
    assert_eq!(host_has_sluice.stdout, host_after.stdout);
}
