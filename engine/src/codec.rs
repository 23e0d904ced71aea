//! Row encoding: one format-version byte, then postcard. Old versions stay decodable so that a
//! migration can read rows written by an earlier build. Instants inside rows are stored as
//! microseconds (`micros`, `micros_opt`).

use serde::{Serialize, de::DeserializeOwned};

use crate::{Error, Result};

/// The current on-disk row format.
pub const FORMAT_V1: u8 = 1;

pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let out = vec![FORMAT_V1];
    // postcard only fails on writer errors or unsupported serde features (e.g. untagged
    // enums); our row types use neither, so failure here is a programming error.
    postcard::to_extend(value, out).expect("row types are postcard-serializable")
}

pub fn decode<T: DeserializeOwned>(table: &str, bytes: &[u8]) -> Result<T> {
    match bytes.split_first() {
        Some((&FORMAT_V1, rest)) => {
            postcard::from_bytes(rest).map_err(|e| Error::Corrupt { table: table.to_string(), reason: e.to_string() })
        }
        Some((v, _)) => {
            Err(Error::Corrupt { table: table.to_string(), reason: format!("unknown row format version {v}") })
        }
        None => Err(Error::Corrupt { table: table.to_string(), reason: "empty row".into() }),
    }
}

/// Instants are stored as microseconds since the epoch: compact, and no text parsing per read.
pub(crate) mod micros {
    use jiff::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(t.as_microsecond())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        Timestamp::from_microsecond(i64::deserialize(d)?).map_err(D::Error::custom)
    }
}

pub(crate) mod micros_opt {
    use jiff::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(t: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_some(&t.as_microsecond()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
        Option::<i64>::deserialize(d)?.map(|m| Timestamp::from_microsecond(m).map_err(D::Error::custom)).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_unknown_versions() {
        let bytes = encode(&(7u64, "x".to_string()));
        assert_eq!(bytes[0], FORMAT_V1);
        let back: (u64, String) = decode("t", &bytes).unwrap();
        assert_eq!(back, (7, "x".to_string()));
        let mut future = bytes.clone();
        future[0] = 9;
        assert!(matches!(decode::<(u64, String)>("t", &future), Err(Error::Corrupt { .. })));
        assert!(decode::<(u64, String)>("t", &[]).is_err());
    }
}
