// Embeds every launches/*.toml of this crate in the binary, so the catalog is data that
// users can read and extend (`--launch-file`) but needs no files at run time.
use std::fmt::Write;

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("launches");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("launches/ directory")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    names.sort();
    let mut out = String::from("pub(crate) const BUILTIN: &[(&str, &str)] = &[\n");
    for p in names {
        println!("cargo:rerun-if-changed={}", p.display());
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        writeln!(
            out,
            "    ({name:?}, include_str!({:?})),",
            p.canonicalize().unwrap().display().to_string()
        )
        .unwrap();
    }
    out.push_str("];\n");
    let dest = std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("builtin.rs");
    std::fs::write(dest, out).unwrap();
}
