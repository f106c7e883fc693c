//! `sluice man DIR` (hidden): man pages rendered by clap_mangen from the
//! binary's own `clap::Command`, so they cannot drift from `--help`.
//!
//! clap_mangen's own "EXTRA" section reflows the text after the options
//! (`after_help`), which breaks the column layout of lists such as
//! `sluice ctl`'s commands; this module renders that text as a NOTES
//! section without filling instead, and adds SEE ALSO links between a
//! command's page and its subcommands' pages.

use std::io::Write;
use std::path::Path;

use anyhow::Context;

/// Writes `sluice.1` and one `sluice-SUB[-SUBSUB].1` page per visible
/// (sub)command into `dir`, creating it if needed.
pub fn write_pages(cmd: clap::Command, dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create man page directory {}", dir.display()))?;
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let version = cmd.get_version().unwrap_or_default().to_string();
    write_tree(&cmd, None, &version, dir)
}

fn write_tree(
    cmd: &clap::Command,
    parent: Option<&str>,
    version: &str,
    dir: &Path,
) -> anyhow::Result<()> {
    let page = page_name(cmd);
    let path = dir.join(format!("{page}.1"));
    let mut text = Vec::new();
    render(cmd, parent, version, &mut text)
        .with_context(|| format!("cannot render the man page of {page}"))?;
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_tree(sub, Some(&page), version, dir)?;
    }
    Ok(())
}

/// `sluice`, `sluice-ctl`, `sluice-p4-check`: clap's display name once the
/// command tree is built.
fn page_name(cmd: &clap::Command) -> String {
    cmd.get_display_name().unwrap_or_else(|| cmd.get_name()).to_string()
}

fn render(
    cmd: &clap::Command,
    parent: Option<&str>,
    version: &str,
    w: &mut Vec<u8>,
) -> std::io::Result<()> {
    let man = clap_mangen::Man::new(cmd.clone())
        .source(format!("sluice {version}"))
        .manual("sluice manual");
    man.render_title(w)?;
    man.render_name_section(w)?;
    man.render_synopsis_section(w)?;
    man.render_description_section(w)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(w)?;
    }
    let subs: Vec<String> =
        cmd.get_subcommands().filter(|s| !s.is_hide_set()).map(page_name).collect();
    if !subs.is_empty() {
        man.render_subcommands_section(w)?;
    }
    if let Some(after) = cmd.get_after_long_help().or_else(|| cmd.get_after_help()) {
        writeln!(w, ".SH NOTES\n.nf")?;
        for line in after.to_string().lines() {
            writeln!(w, "{}", roff_line(line))?;
        }
        writeln!(w, ".fi")?;
    }
    if parent.is_none() && cmd.get_version().is_some() {
        man.render_version_section(w)?;
    }
    let see_also: Vec<String> = parent
        .map(str::to_string)
        .into_iter()
        .chain(subs)
        .map(|p| format!("\\fB{}\\fR(1)", p.replace('-', "\\-")))
        .collect();
    if !see_also.is_empty() {
        writeln!(w, ".SH \"SEE ALSO\"\n{}", see_also.join(", "))?;
    }
    Ok(())
}

/// One line of literal text for roff: backslashes escaped, and a leading
/// `.` or `'` (which roff would read as a request) neutralised.
fn roff_line(line: &str) -> String {
    let escaped = line.replace('\\', "\\e");
    if escaped.starts_with('.') || escaped.starts_with('\'') {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}
