//! `sluice completions SHELL`: scripts generated from the CLI definition.
//! The bash script is loaded into a real bash and asked to complete
//! partial command lines, as the shell does on TAB; the other shells'
//! scripts are checked to name the subcommands. Needs bash (always
//! present on Debian).

use std::process::Command;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

fn script(shell: &str) -> String {
    let out = Command::new(SLUICE).args(["completions", shell]).output().expect("run sluice");
    assert!(out.status.success(), "{shell}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8 script")
}

/// What bash's completion of `words` (the last one being completed)
/// offers, with sluice's script loaded.
fn bash_complete(words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let prev = if cword > 0 { words[cword - 1] } else { "" };
    let program = format!(
        "source <('{SLUICE}' completions bash) || exit 9\n\
         COMP_WORDS=({})\nCOMP_CWORD={cword}\n\
         _sluice sluice '{}' '{prev}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        quoted.join(" "),
        words[cword],
    );
    let out = Command::new("bash").arg("-c").arg(&program).output().expect("bash");
    assert!(out.status.success(), "{program}\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

#[test]
fn bash_completes_subcommands_and_values() {
    assert_eq!(bash_complete(&["sluice", "ct"]), ["ctl"]);
    let all = bash_complete(&["sluice", ""]);
    for sub in ["run", "ctl", "trace", "replay", "bench", "bpf", "filter", "p4", "completions"] {
        assert!(all.iter().any(|w| w == sub), "{sub} missing from {all:?}");
    }
    let p4 = bash_complete(&["sluice", "p4", ""]);
    for sub in ["check", "info", "test", "suite"] {
        assert!(p4.iter().any(|w| w == sub), "{sub} missing from {p4:?}");
    }
    assert_eq!(
        bash_complete(&["sluice", "bench", "--cache", ""]),
        ["on", "megaflow", "off", "auto", "all"]
    );
    assert_eq!(bash_complete(&["sluice", "completions", "f"]), ["fish"]);
}

#[test]
fn zsh_and_fish_scripts_name_the_subcommands() {
    let zsh = script("zsh");
    assert!(zsh.starts_with("#compdef sluice"), "{}", &zsh[..zsh.len().min(200)]);
    let fish = script("fish");
    for s in [&zsh, &fish] {
        for sub in ["ctl", "p4", "bench"] {
            assert!(s.contains(sub), "{sub}");
        }
    }
    assert!(fish.contains("complete -c sluice"));
}

#[test]
fn an_unknown_shell_is_named() {
    let out = Command::new(SLUICE).args(["completions", "tcsh"]).output().expect("run sluice");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("invalid value 'tcsh'"), "{err}");
}
