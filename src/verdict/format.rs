//! The verdict's output formats.

/// Output format of the verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Human-readable text: findings grouped by rule.
    Text,
    /// One JSON document: every finding with its count and first occurrences.
    Json,
    /// JUnit XML (one test case per rule of the catalog, plus any other rule seen).
    Junit,
}
