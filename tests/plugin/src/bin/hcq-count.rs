//! `hcq-count`: the `hcq` command line with the `COUNT` device kind registered first.

fn main() -> std::process::ExitCode {
    hcq_plugin_count::register();
    hcq_cli::main()
}
