//! Writes the CRD YAML of every Cairn resource.
//!
//! `crdgen` prints all CRDs to stdout as one multi-document stream; `crdgen --out DIR` writes
//! one file per CRD (as committed in `crds/yaml/` and `charts/cairn-operator/crds/`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = match args.as_slice() {
        [] => None,
        [flag, dir] if flag == "--out" => Some(PathBuf::from(dir)),
        _ => {
            eprintln!("usage: crdgen [--out DIR]");
            return ExitCode::from(2);
        }
    };
    match run(out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("crdgen: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(out: Option<PathBuf>) -> Result<(), Box<dyn std::error::Error>> {
    for (file, crd) in cairn_crds::crds() {
        let yaml = cairn_crds::render_yaml(&crd)?;
        match &out {
            Some(dir) => std::fs::write(dir.join(file), yaml)?,
            None => {
                let mut stdout = std::io::stdout().lock();
                writeln!(stdout, "---")?;
                stdout.write_all(yaml.as_bytes())?;
            }
        }
    }
    Ok(())
}
