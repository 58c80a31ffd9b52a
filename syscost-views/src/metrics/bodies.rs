//! The exposition of the latest sample, encoded once per format however many scrapes
//! ask for it: a scrape shares the body (the answer sends it, then the endpoint's
//! counters), it neither copies nor encodes it (nor, since the endpoint serves the
//! session's published samples, takes a sample).

use std::sync::Mutex;

use anyhow::Result;
use bytes::Bytes;

use super::encode::Format;

/// One encoded body per format, with the number of the sample it shows.
#[derive(Default)]
pub struct Bodies {
    text: Mutex<Option<(u64, Bytes)>>,
    protobuf: Mutex<Option<(u64, Bytes)>>,
}

impl Bodies {
    /// The body of sample `seq` in `format`: the one kept when it shows that sample or a
    /// later one, else `encode`'s, kept. A scrape that asks while another encodes the
    /// same format waits for it and takes its body.
    pub fn get(
        &self,
        seq: u64,
        format: Format,
        encode: impl FnOnce() -> Result<Bytes>,
    ) -> Result<Bytes> {
        let slot = match format {
            Format::Text => &self.text,
            Format::Protobuf => &self.protobuf,
        };
        let mut kept = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((at, body)) = &*kept
            && *at >= seq
        {
            return Ok(body.clone());
        }
        let body = encode()?;
        *kept = Some((seq, body.clone()));
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{
        Arc, Barrier,
        atomic::{AtomicUsize, Ordering},
    };

    use super::*;

    /// Many scrapes of one sample at once: one encoding per format; a new sample, one
    /// more; an older sample asked late gets the newer body, not an encoding.
    #[test]
    fn each_sample_is_encoded_once_per_format() {
        let bodies = Arc::new(Bodies::default());
        let encoded = Arc::new(AtomicUsize::new(0));
        let scrapes = 16;
        let barrier = Arc::new(Barrier::new(scrapes));
        let threads: Vec<_> = (0..scrapes)
            .map(|i| {
                let (bodies, encoded, barrier) = (bodies.clone(), encoded.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let format = if i % 2 == 0 {
                        Format::Text
                    } else {
                        Format::Protobuf
                    };
                    barrier.wait();
                    bodies
                        .get(1, format, || {
                            encoded.fetch_add(1, Ordering::SeqCst);
                            Ok(Bytes::from(format!("{format:?} of 1")))
                        })
                        .unwrap()
                })
            })
            .collect();
        for (i, t) in threads.into_iter().enumerate() {
            let format = if i % 2 == 0 { "Text" } else { "Protobuf" };
            assert_eq!(t.join().unwrap(), Bytes::from(format!("{format} of 1")));
        }
        assert_eq!(encoded.load(Ordering::SeqCst), 2, "one encoding per format");
        let count = |seq, format| {
            let encoded = encoded.clone();
            bodies
                .get(seq, format, move || {
                    encoded.fetch_add(1, Ordering::SeqCst);
                    Ok(Bytes::from(format!("{seq}")))
                })
                .unwrap()
        };
        assert_eq!(count(2, Format::Text), Bytes::from("2"));
        assert_eq!(count(2, Format::Text), Bytes::from("2"));
        assert_eq!(count(1, Format::Text), Bytes::from("2"), "the newer body");
        assert_eq!(encoded.load(Ordering::SeqCst), 3);
        // An encoding that fails is not kept: the next scrape tries again.
        assert!(bodies.get(3, Format::Text, || anyhow::bail!("no")).is_err());
        assert_eq!(count(3, Format::Text), Bytes::from("3"));
        assert_eq!(encoded.load(Ordering::SeqCst), 4);
    }
}
