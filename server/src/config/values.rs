//! Small value types the configuration validates at boot: IP networks, the strict client
//! version, and the reminder wall time. Each parser is total over untrusted text (fuzzed).

use std::net::IpAddr;
use std::str::FromStr;

/// An IP network (`10.0.0.0/8`, `::1/128`, or a bare address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl IpNet {
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match (canonical(self.addr), ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }

    /// Whether this network matches every address of its family.
    pub fn is_catch_all(&self) -> bool {
        self.prefix == 0
    }
}

/// IPv4-mapped IPv6 addresses compare as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

impl FromStr for IpNet {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| format!("{s:?} is not an IP address or CIDR"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => match p.parse::<u8>() {
                Ok(p) if p <= max => p,
                _ => return Err(format!("{s:?} has an invalid prefix length")),
            },
        };
        Ok(IpNet { addr, prefix })
    }
}

/// A strict `major.minor.patch` version (no leading zeros, no pre-release or build suffix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u64, pub u64, pub u64);

impl FromStr for Version {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("{s:?} is not a strict major.minor.patch version");
        let parts: Vec<&str> = s.split('.').collect();
        if parts.len() != 3 {
            return Err(bad());
        }
        let mut numbers = [0u64; 3];
        for (slot, part) in numbers.iter_mut().zip(&parts) {
            let digits_only = !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
            if !digits_only || (part.len() > 1 && part.starts_with('0')) {
                return Err(bad());
            }
            *slot = part.parse().map_err(|_| bad())?;
        }
        Ok(Version(numbers[0], numbers[1], numbers[2]))
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// A wall time `HH:MM`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WallTime {
    pub hour: i8,
    pub minute: i8,
}

impl FromStr for WallTime {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("{s:?} is not a HH:MM time");
        let (h, m) = s.split_once(':').ok_or_else(bad)?;
        if h.len() != 2 || m.len() != 2 || !h.bytes().chain(m.bytes()).all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let (hour, minute) = (h.parse::<i8>().map_err(|_| bad())?, m.parse::<i8>().map_err(|_| bad())?);
        if hour > 23 || minute > 59 {
            return Err(bad());
        }
        Ok(WallTime { hour, minute })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_parse_and_match() {
        let net: IpNet = "10.1.0.0/16".parse().unwrap();
        assert!(net.contains("10.1.200.3".parse().unwrap()));
        assert!(!net.contains("10.2.0.1".parse().unwrap()));
        assert!(net.contains("::ffff:10.1.0.9".parse().unwrap()), "mapped v4 matches");
        let one: IpNet = "::1".parse().unwrap();
        assert_eq!(one.prefix, 128);
        assert!("0.0.0.0/0".parse::<IpNet>().unwrap().is_catch_all());
        assert!("10.0.0.0/33".parse::<IpNet>().is_err());
        assert!("example.org".parse::<IpNet>().is_err());
    }

    #[test]
    fn versions_are_strict() {
        assert_eq!("1.2.3".parse::<Version>(), Ok(Version(1, 2, 3)));
        assert!("0.6.0".parse::<Version>().unwrap() < "0.10.0".parse::<Version>().unwrap());
        for bad in ["1.2", "1.2.3.4", "v1.2.3", "1.02.3", "1.2.3-beta", "", "1..3", "1.2.+3"] {
            assert!(bad.parse::<Version>().is_err(), "{bad}");
        }
    }

    #[test]
    fn wall_times_are_hh_mm() {
        assert_eq!("06:00".parse::<WallTime>(), Ok(WallTime { hour: 6, minute: 0 }));
        for bad in ["6:00", "24:00", "12:60", "1200", "ab:cd", "12:5"] {
            assert!(bad.parse::<WallTime>().is_err(), "{bad}");
        }
    }
}
