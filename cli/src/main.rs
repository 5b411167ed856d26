//! The `hcq` binary: [`hcq_cli::main`] over this process's arguments.

fn main() -> std::process::ExitCode {
    hcq_cli::main()
}
