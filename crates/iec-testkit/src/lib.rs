//! Test support shared by the workspace's suites and benchmarks. A dev-dependency only: no
//! product crate or binary links it.

pub mod bins;
pub mod gen;
pub mod par;
pub mod rotation;
pub mod skip;
pub mod venv;
