//! Log output: JSON lines on stdout (one object per line, the spec's keys at the top level), or
//! human-readable lines with `LOG_PRETTY`.

use tracing_subscriber::EnvFilter;

pub fn init(level: &str, pretty: bool) {
    // Our own crates at the configured level; dependencies one notch quieter unless debugging.
    let filter = EnvFilter::new(format!("warn,mycorrhizal={level},mycorrhizal_engine={level}"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stdout);
    let _ = if pretty {
        builder.with_ansi(false).try_init()
    } else {
        builder.json().flatten_event(true).with_current_span(false).with_span_list(false).try_init()
    };
}
