/*!
IEC-Bench: does the path an agent's tool call takes change the outcome of the work, and does
IntAct win it back? The bench holds recorded actions fixed and changes only the launch.

* [`data`]: the data files (`data/pairs.jsonl`, `data/chains.jsonl`, `data/tasks.jsonl`, each
  item citing its source), read with the file and line of every error.
* [`chain`]: chains in ToolHop's record schema, their lookup-table tools (never code from a
  data file), and a reader of a real `ToolHop.json`.
* [`sandbox`]: the throwaway directory every item runs in, and the observation of its final
  state.
* [`replay`]: replay mode over the paths, with IntAct off and on, and the per-path figures.
* [`harness`]: harness mode: the pairs, chains and tasks through a real Claude Code, Codex or
  Gemini CLI (the replay model server of `iec-harness` emits each text as its tool call, a
  chain's later steps from what ran), IntAct off and (Claude Code) on, beside replay mode's
  outcome on the launch that models it.
* [`agent`]: agent mode: a model behind an Anthropic or OpenAI-compatible endpoint does each
  task with a shell tool whose calls go along the path, IntAct off and on; pass rate, tokens per
  passed task, false confirmations.
* [`stats`]: the exact McNemar test.
* [`report`]: the terminal table.
* [`harbor`]: the pairs and tasks as a Harbor dataset (`iec bench export --harbor`).
* [`html`]: the self-contained HTML report (inline SVG charts).
*/
#![deny(missing_docs)]

pub mod agent;
pub mod chain;
pub mod data;
pub mod harbor;
pub mod harness;
pub mod html;
pub mod replay;
pub mod report;
pub mod sandbox;
pub mod stats;

pub use data::{DataError, Suite};
pub use replay::{Report, Runner, PATHS};
