//! The streaming every export follows. A producer runs on the blocking pool and writes bytes;
//! they are gathered into chunks of [`CHUNK`] bytes and handed through a bounded channel to
//! whoever sends them on, so memory stays flat whatever the export's size. The first chunk (or
//! the producer's end) decides the answer: a failure before it is a clean failure with nothing
//! sent ([`ExportError::Failed`]); a failure after it ends the stream with an error item, so the
//! receiver sees a broken download, never a complete-looking short file, and is logged.
//! What the bytes are is the renderers' business; how they reach a client is the front door's.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::{mpsc, oneshot};

use super::ExportError;

/// Bytes gathered before a chunk is sent.
pub const CHUNK: usize = 64 * 1024;
/// Chunks in flight between the producer and the receiver.
const IN_FLIGHT: usize = 4;

/// An export's bytes, chunk by chunk, as they are made. An `Err` item ends it early: the export
/// failed after its first chunk.
pub struct Chunks(mpsc::Receiver<Result<Vec<u8>, std::io::Error>>);

impl futures_core::Stream for Chunks {
    type Item = Result<Vec<u8>, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}

/// What failed: the spec's `details.category`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    /// Reading the user's rows or pictures.
    Database,
    /// Writing a row in the export's format.
    Serialization,
}

impl Category {
    /// As the spec names it: `database` or `serialization`.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Database => "database",
            Category::Serialization => "serialization",
        }
    }
}

/// Why an export stopped: its category and what the log says.
#[derive(Debug)]
pub struct Failure {
    pub category: Category,
    pub message: String,
}

impl Failure {
    pub fn database(e: impl std::fmt::Display) -> Self {
        Failure { category: Category::Database, message: e.to_string() }
    }

    pub fn serialization(e: impl std::fmt::Display) -> Self {
        Failure { category: Category::Serialization, message: e.to_string() }
    }
}

/// Where a renderer writes: `false` once nothing more can be written (the receiver has gone).
pub trait Out {
    fn push(&mut self, bytes: &[u8]) -> bool;
}

/// Hands bytes on in chunks of [`CHUNK`]. The first chunk starts the export; until then a
/// failure is still a clean one.
pub struct Sink {
    buffer: Vec<u8>,
    tx: mpsc::Sender<Result<Vec<u8>, std::io::Error>>,
    ready: Option<oneshot::Sender<()>>,
}

impl Out for Sink {
    fn push(&mut self, bytes: &[u8]) -> bool {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= CHUNK { self.flush() } else { true }
    }
}

impl Sink {
    fn flush(&mut self) -> bool {
        if self.buffer.is_empty() {
            return true;
        }
        self.start();
        let chunk = std::mem::replace(&mut self.buffer, Vec::with_capacity(CHUNK));
        self.tx.blocking_send(Ok(chunk)).is_ok()
    }

    /// Hands `chunk` on whole, after what is gathered, without copying it (a writer that
    /// gathers its own chunks); `false` once the receiver has gone.
    pub fn send(&mut self, chunk: Vec<u8>) -> bool {
        if !self.flush() {
            return false;
        }
        if chunk.is_empty() {
            return true;
        }
        self.start();
        self.tx.blocking_send(Ok(chunk)).is_ok()
    }

    /// Lets the export start; from here a failure can only end the stream early.
    fn start(&mut self) {
        if let Some(r) = self.ready.take() {
            let _ = r.send(());
        }
    }

    /// Whether the receiver has gone.
    pub fn client_gone(&self) -> bool {
        self.tx.is_closed()
    }
}

/// A ZIP archive's bytes go on as they are made.
impl std::io::Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if Out::push(self, bytes) {
            Ok(bytes.len())
        } else {
            Err(std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away"))
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `producer` on the blocking pool, streaming what it writes. Answers when the first chunk
/// is ready (or the producer ends): then with the stream, or, if the producer failed first,
/// with [`ExportError::Failed`] and no byte made. `operation` names the export in that error and
/// in the log (`export:csv`, `export:vcard4`, ...).
pub async fn stream(
    operation: &'static str,
    producer: impl FnOnce(&mut Sink) -> Result<(), Failure> + Send + 'static,
) -> Result<Chunks, ExportError> {
    let logged = move |out: &mut Sink| {
        producer(out).inspect_err(|e| {
            tracing::error!(event = "export_failed", operation, category = e.category.as_str(), error = %e.message);
        })
    };
    match produce(logged, |e| e.message.clone()).await {
        Ok(chunks) => Ok(chunks),
        Err(Some(failure)) => Err(ExportError::Failed { operation, failure }),
        // The producer died without a word (a panic): it was reading the database.
        Err(None) => Err(ExportError::Failed { operation, failure: Failure::database("the export stopped") }),
    }
}

/// Runs `producer` on the blocking pool, streaming what it writes (an export, a DAV report of
/// thousands of cards): the bytes go on in chunks of [`CHUNK`] as they are made, at most a few
/// chunks in flight, so memory stays flat whatever the answer's size. Answers when the first
/// chunk is ready (or the producer ends): with the stream, or with the producer's error if it
/// failed before that (`None` if it died without a word, a panic), no byte having been sent. A
/// failure after the first chunk ends the stream with an error item saying `late` of it.
pub async fn produce<E: Send + 'static>(
    producer: impl FnOnce(&mut Sink) -> Result<(), E> + Send + 'static,
    late: impl FnOnce(&E) -> String + Send + 'static,
) -> Result<Chunks, Option<E>> {
    let (tx, rx) = mpsc::channel(IN_FLIGHT);
    let (ready, started) = oneshot::channel::<()>();
    let task = tokio::task::spawn_blocking(move || {
        let mut out = Sink { buffer: Vec::with_capacity(CHUNK), tx, ready: Some(ready) };
        match producer(&mut out) {
            Ok(()) => {
                out.flush();
                out.start();
                Ok(())
            }
            // Nothing sent yet: the error is the answer (the sink, dropped, says so).
            Err(e) if out.ready.is_some() => Err(e),
            Err(e) => {
                let _ = out.tx.blocking_send(Err(std::io::Error::other(late(&e))));
                Ok(())
            }
        }
    });
    match started.await {
        Ok(()) => Ok(Chunks(rx)),
        // Ended without starting: it failed, or died without a word (a panic).
        Err(_) => match task.await {
            Ok(Err(e)) => Err(Some(e)),
            Ok(Ok(())) | Err(_) => Err(None),
        },
    }
}

#[cfg(test)]
mod tests {
    use futures_core::Stream;

    use super::*;

    /// Every item of `chunks`, in order.
    async fn drain(mut chunks: Chunks) -> Vec<Result<Vec<u8>, std::io::Error>> {
        let mut items = Vec::new();
        while let Some(item) = std::future::poll_fn(|cx| Pin::new(&mut chunks).poll_next(cx)).await {
            items.push(item);
        }
        items
    }

    /// Before the first chunk a failure is the error, with its category; bytes written so far
    /// (less than a chunk) are never sent.
    #[tokio::test]
    async fn a_failure_before_the_first_chunk_is_the_answer() {
        let outcome = stream("export:vcard4", |out| {
            out.push(b"BEGIN:VCARD\r\n");
            Err(Failure::serialization("no card"))
        })
        .await;
        match outcome {
            Err(ExportError::Failed { operation, failure }) => {
                assert_eq!((operation, failure.category), ("export:vcard4", Category::Serialization));
            }
            Err(e) => panic!("another error: {e}"),
            Ok(_) => panic!("the export started"),
        }
    }

    /// After the first chunk the export has started: a failure is the stream's last item.
    #[tokio::test]
    async fn a_failure_after_the_first_chunk_ends_the_stream_with_an_error() {
        let chunks = stream("export:csv", |out| {
            out.push(&vec![b'a'; CHUNK + 1]);
            Err(Failure::database("page 2 failed"))
        })
        .await
        .map_err(|e| e.to_string())
        .expect("started");
        let items = drain(chunks).await;
        assert_eq!(items.len(), 2, "one chunk, then the error");
        assert_eq!(items[0].as_ref().map(Vec::len).ok(), Some(CHUNK + 1));
        assert!(items[1].is_err());
    }
}
