/*!
`iec scan`: point `iec` at the session logs agents already wrote and learn how often their shell
calls did not run as written.

* **Readers** ([`readers`]), one module per format, chosen by content: Claude Code transcripts,
  Codex rollouts, Gemini CLI chats, OpenHands event streams, Cline/Roo task histories and
  Harbor ATIF trajectories. Line formats are streamed through a bounded line reader
  ([`input::Lines`]); bad input is skipped and counted by reason ([`input::Skips`]), or stops a
  `--strict` scan at the first.
* **Launch** ([`resolve`]): the harness, version, OS and tool a log records, resolved by the
  catalog's version ranges; a version no launch covers is reported as uncovered.
* **Verdicts** ([`scan`]): `iec_check::check` once per distinct (launch, command), in parallel;
  plain texts take the checker's no-witness shortcut.
* **Attribution** ([`attribution`]) of failed calls: generation, path, wrapper, nested, other;
  disagreements between the log's evidence and the prediction.
* **Report** ([`report`], [`html`]): the summary table, JSON, JSON Lines per call, an HTML page.
*/
#![deny(missing_docs)]

pub mod attribution;
pub mod call;
pub mod html;
pub mod input;
pub mod readers;
pub mod report;
pub mod resolve;
pub mod scan;

pub use call::{LoggedCall, Outcome};
pub use input::{Skip, Skips, Stop};
pub use report::Summary;
pub use scan::{files_under, scan, standard_locations, CallRecord, Options, ScanResult};
