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
* [`stats`]: the exact McNemar test.
* [`report`]: the terminal table.
*/
#![deny(missing_docs)]

pub mod chain;
pub mod data;
pub mod replay;
pub mod report;
pub mod sandbox;
pub mod stats;

pub use data::{DataError, Suite};
pub use replay::{Report, Runner, PATHS};
