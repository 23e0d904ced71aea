//! A multipart file field read as it arrives: the request's task passes its chunks on
//! ([`pass_on`]) to a reader on the blocking pool ([`Arriving`]), so an upload is parsed while it
//! comes and never held whole. The JSON API's and the web's vCard uploads both use it.

use axum::body::Bytes;
use axum::extract::multipart::Field;

use crate::error::ApiError;

/// A multipart error, told as the `file` field's.
pub fn multipart_error(e: axum::extract::multipart::MultipartError) -> ApiError {
    ApiError::invalid_input("file", e.body_text())
}

/// An upload's bytes as they arrive, read on the blocking pool: the chunks the request handler
/// passes on, then the end, or an error once the upload failed (too large, cut off, empty).
pub struct Arriving {
    chunks: tokio::sync::mpsc::Receiver<Result<Bytes, String>>,
    chunk: Bytes,
}

/// A channel for one upload: the sender for [`pass_on`], the reader for the parser.
pub fn channel() -> (tokio::sync::mpsc::Sender<Result<Bytes, String>>, Arriving) {
    let (to, chunks) = tokio::sync::mpsc::channel(4);
    (to, Arriving { chunks, chunk: Bytes::new() })
}

impl std::io::Read for Arriving {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.chunk.is_empty() {
            match self.chunks.blocking_recv() {
                None => return Ok(0),
                Some(Ok(chunk)) => self.chunk = chunk,
                Some(Err(e)) => return Err(std::io::Error::other(e)),
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk[..n]);
        self.chunk = self.chunk.slice(n..);
        Ok(n)
    }
}

/// Passes the field's bytes on to `to` as they arrive, enforcing `limit`; an upload that fails
/// (or is empty) is told to the reader as an error before this returns the refusal, so what
/// reads it never takes a partial upload for a whole one.
pub async fn pass_on(
    field: &mut Field<'_>,
    to: tokio::sync::mpsc::Sender<Result<Bytes, String>>,
    limit: usize,
) -> Result<(), ApiError> {
    let mut total = 0usize;
    let outcome = async {
        while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
            total += chunk.len();
            if total > limit {
                return Err(ApiError::PayloadTooLarge { limit });
            }
            if to.send(Ok(chunk)).await.is_err() {
                // The reader stopped (it failed): its error is the answer.
                return Ok(());
            }
        }
        if total == 0 {
            return Err(ApiError::invalid_input("file", "the file is empty"));
        }
        Ok(())
    }
    .await;
    if let Err(e) = &outcome {
        let _ = to.send(Err(e.to_string())).await;
    }
    outcome
}
