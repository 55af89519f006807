//! The `amqpeek` command line.

fn main() -> anyhow::Result<()> {
    Ok(())
}
