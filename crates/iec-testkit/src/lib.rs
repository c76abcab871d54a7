//! Test support shared by the workspace's suites and benchmarks. A dev-dependency only: no
//! product crate or binary links it.

pub mod gen;
pub mod par;
pub mod venv;
