//! IP address arithmetic for pool translation: MetalLB address entries (CIDR or `a-b` range),
//! MetalLB's `avoidBuggyIPs`, and Cilium blocks with their exact membership semantics.
//!
//! Addresses are held as `u128` with a family flag so IPv4 and IPv6 share one code path.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    /// IPv4 (values below 2^32).
    V4,
    /// IPv6.
    V6,
}

impl Family {
    fn bits(self) -> u32 {
        match self {
            Family::V4 => 32,
            Family::V6 => 128,
        }
    }
}

/// An inclusive address interval of one family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Interval {
    /// Family of both ends.
    pub family: Family,
    /// First address.
    pub start: u128,
    /// Last address (inclusive).
    pub end: u128,
}

impl Interval {
    /// True when `ip` lies in the interval.
    pub fn contains(&self, ip: (Family, u128)) -> bool {
        ip.0 == self.family && self.start <= ip.1 && ip.1 <= self.end
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-{}",
            format_ip(self.family, self.start),
            format_ip(self.family, self.end)
        )
    }
}

/// One MetalLB `spec.addresses` entry, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetalLbAddress {
    /// `10.0.0.0/24` (host bits cleared, as Go's `net.ParseCIDR` returns the network).
    Cidr {
        /// The covered interval.
        interval: Interval,
        /// Prefix length.
        prefix: u32,
    },
    /// `10.0.0.10-10.0.0.20`.
    Range(Interval),
}

impl MetalLbAddress {
    /// The addresses covered before `avoidBuggyIPs`.
    pub fn interval(&self) -> Interval {
        match self {
            MetalLbAddress::Cidr { interval, .. } | MetalLbAddress::Range(interval) => *interval,
        }
    }
}

/// Parses an IP address into (family, value). IPv4-mapped IPv6 stays IPv6.
pub fn parse_ip(text: &str) -> Option<(Family, u128)> {
    match text.trim().parse::<IpAddr>().ok()? {
        IpAddr::V4(v4) => Some((Family::V4, u128::from(u32::from(v4)))),
        IpAddr::V6(v6) => Some((Family::V6, u128::from(v6))),
    }
}

/// Formats an address.
pub fn format_ip(family: Family, value: u128) -> String {
    match family {
        // Values of the V4 family are always below 2^32.
        Family::V4 => Ipv4Addr::from(u32::try_from(value).unwrap_or(u32::MAX)).to_string(),
        Family::V6 => Ipv6Addr::from(value).to_string(),
    }
}

/// Parses a MetalLB address entry the way MetalLB's `ParseCIDR` does: no `-` means CIDR,
/// otherwise a range split at the first `-`.
pub fn parse_metallb_address(text: &str) -> Result<MetalLbAddress, String> {
    if let Some((a, b)) = text.split_once('-') {
        let (fa, start) =
            parse_ip(a).ok_or_else(|| format!("{text:?}: {a:?} is not an IP address"))?;
        let (fb, end) =
            parse_ip(b).ok_or_else(|| format!("{text:?}: {b:?} is not an IP address"))?;
        if fa != fb {
            return Err(format!("{text:?}: range ends are of different IP families"));
        }
        if start > end {
            return Err(format!("{text:?}: range start is after its end"));
        }
        return Ok(MetalLbAddress::Range(Interval {
            family: fa,
            start,
            end,
        }));
    }
    let (addr, prefix) = text
        .split_once('/')
        .ok_or_else(|| format!("{text:?} is neither a CIDR nor an a-b range"))?;
    let (family, value) =
        parse_ip(addr).ok_or_else(|| format!("{text:?}: {addr:?} is not an IP address"))?;
    let prefix: u32 = prefix
        .trim()
        .parse()
        .ok()
        .filter(|p| *p <= family.bits())
        .ok_or_else(|| format!("{text:?}: invalid prefix length"))?;
    let host_bits = family.bits() - prefix;
    let host_mask: u128 = if host_bits == 128 {
        u128::MAX
    } else {
        (1u128 << host_bits) - 1
    };
    let start = value & !host_mask;
    Ok(MetalLbAddress::Cidr {
        interval: Interval {
            family,
            start,
            end: start | host_mask,
        },
        prefix,
    })
}

/// MetalLB's `avoidBuggyIPs` rule: an IPv4 address whose last octet is 0 or 255 is never handed
/// out. IPv6 addresses are unaffected. (Used by the tests to check [`split_avoiding_buggy`].)
#[cfg(test)]
pub fn is_buggy(family: Family, value: u128) -> bool {
    family == Family::V4 && matches!(value & 0xff, 0 | 255)
}

/// Upper bound on blocks one address entry may expand into (a /12 with `avoidBuggyIPs`).
pub const MAX_SPLIT_BLOCKS: u128 = 4096;

/// Splits an IPv4 interval into the sub-ranges that avoid every `.0` and `.255` address.
/// Returns an error when the split would exceed [`MAX_SPLIT_BLOCKS`].
pub fn split_avoiding_buggy(iv: Interval) -> Result<Vec<Interval>, String> {
    if iv.family != Family::V4 {
        return Ok(vec![iv]);
    }
    let first_chunk = iv.start >> 8;
    let last_chunk = iv.end >> 8;
    if last_chunk - first_chunk + 1 > MAX_SPLIT_BLOCKS {
        return Err(format!(
            "{iv} spans {} /24 networks; avoiding .0/.255 would need one Cilium block each (limit {MAX_SPLIT_BLOCKS})",
            last_chunk - first_chunk + 1
        ));
    }
    let mut out = Vec::new();
    for chunk in first_chunk..=last_chunk {
        let lo = iv.start.max((chunk << 8) | 1);
        let hi = iv.end.min((chunk << 8) | 254);
        if lo <= hi {
            out.push(Interval {
                family: iv.family,
                start: lo,
                end: hi,
            });
        }
    }
    Ok(out)
}

/// A block as Cilium reads it, with the pool's `allowFirstLastIPs` applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CiliumBlock {
    /// `cidr:`; `first_last_reserved` mirrors `allowFirstLastIPs: No` (ignored for /31, /32,
    /// /127, /128 as in Cilium).
    Cidr {
        /// Covered interval.
        interval: Interval,
        /// Prefix length.
        prefix: u32,
        /// Whether the first and last address are reserved.
        first_last_reserved: bool,
    },
    /// `start:`/`stop:` (Cilium never reserves addresses of a range).
    Range(Interval),
}

impl CiliumBlock {
    /// Parses an emitted block (`cidr` or `start`[+`stop`]) the way Cilium does.
    pub fn parse(
        cidr: Option<&str>,
        start: Option<&str>,
        stop: Option<&str>,
        allow_first_last: Option<&str>,
    ) -> Option<CiliumBlock> {
        if let Some(cidr) = cidr {
            let MetalLbAddress::Cidr { interval, prefix } = parse_metallb_address(cidr)
                .ok()
                .filter(|_| !cidr.contains('-'))?
            else {
                return None;
            };
            return Some(CiliumBlock::Cidr {
                interval,
                prefix,
                first_last_reserved: allow_first_last == Some("No"),
            });
        }
        let (fs, s) = parse_ip(start?)?;
        let (fe, e) = match stop {
            Some(stop) => parse_ip(stop)?,
            None => (fs, s),
        };
        (fs == fe && s <= e).then_some(CiliumBlock::Range(Interval {
            family: fs,
            start: s,
            end: e,
        }))
    }

    /// True when Cilium could allocate (or import) `ip` from this block.
    pub fn allows(&self, ip: (Family, u128)) -> bool {
        match self {
            CiliumBlock::Range(iv) => iv.contains(ip),
            CiliumBlock::Cidr {
                interval,
                prefix,
                first_last_reserved,
            } => {
                if !interval.contains(ip) {
                    return false;
                }
                let tiny = interval.family.bits() - prefix <= 1;
                !(*first_last_reserved && !tiny && (ip.1 == interval.start || ip.1 == interval.end))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str) -> u128 {
        parse_ip(s).unwrap().1
    }

    #[test]
    fn cidr_and_range_entries() {
        let MetalLbAddress::Cidr { interval, prefix } =
            parse_metallb_address("10.1.2.77/24").unwrap()
        else {
            panic!()
        };
        assert_eq!(prefix, 24);
        assert_eq!(interval.to_string(), "10.1.2.0-10.1.2.255");
        let r = parse_metallb_address("192.168.123.200-192.168.123.250").unwrap();
        assert_eq!(r.interval().end - r.interval().start, 50);
        let six = parse_metallb_address("fc00:f853:ccd:e799::/124").unwrap();
        assert_eq!(six.interval().end - six.interval().start, 15);
        assert_eq!(six.interval().family, Family::V6);
        assert!(parse_metallb_address("::/0").is_ok());
        assert!(parse_metallb_address("10.0.0.0/33").is_err());
        assert!(parse_metallb_address("10.0.0.9-10.0.0.1").is_err());
        assert!(parse_metallb_address("10.0.0.1-::1").is_err());
        assert!(parse_metallb_address("10.0.0.1").is_err());
    }

    #[test]
    fn avoid_buggy_splits_exactly_at_dot0_and_dot255() {
        let iv = parse_metallb_address("10.0.0.0/22").unwrap().interval();
        let parts: Vec<String> = split_avoiding_buggy(iv)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            parts,
            [
                "10.0.0.1-10.0.0.254",
                "10.0.1.1-10.0.1.254",
                "10.0.2.1-10.0.2.254",
                "10.0.3.1-10.0.3.254"
            ]
        );
        // Every address of the /22 is either buggy or in exactly one part.
        let parts = split_avoiding_buggy(iv).unwrap();
        for ip in iv.start..=iv.end {
            let n = parts
                .iter()
                .filter(|p| p.contains((Family::V4, ip)))
                .count();
            assert_eq!(n, usize::from(!is_buggy(Family::V4, ip)), "{ip}");
        }
        let cross = parse_metallb_address("10.0.0.250-10.0.1.3").unwrap();
        let parts: Vec<String> = split_avoiding_buggy(cross.interval())
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(parts, ["10.0.0.250-10.0.0.254", "10.0.1.1-10.0.1.3"]);
        let only_buggy = parse_metallb_address("10.0.0.255-10.0.1.0").unwrap();
        assert!(
            split_avoiding_buggy(only_buggy.interval())
                .unwrap()
                .is_empty()
        );
        let six = parse_metallb_address("fd00::/120").unwrap().interval();
        assert_eq!(split_avoiding_buggy(six).unwrap(), vec![six]);
        let huge = parse_metallb_address("10.0.0.0/8").unwrap().interval();
        assert!(split_avoiding_buggy(huge).is_err());
    }

    #[test]
    fn cilium_blocks_reserve_first_last_only_for_cidrs() {
        let b = CiliumBlock::parse(Some("10.0.0.0/24"), None, None, Some("No")).unwrap();
        assert!(!b.allows((Family::V4, v4("10.0.0.0"))));
        assert!(!b.allows((Family::V4, v4("10.0.0.255"))));
        assert!(b.allows((Family::V4, v4("10.0.0.1"))));
        let b = CiliumBlock::parse(Some("10.0.0.0/24"), None, None, Some("Yes")).unwrap();
        assert!(b.allows((Family::V4, v4("10.0.0.0"))));
        let b = CiliumBlock::parse(Some("10.0.0.4/31"), None, None, Some("No")).unwrap();
        assert!(b.allows((Family::V4, v4("10.0.0.4"))));
        let b = CiliumBlock::parse(None, Some("10.0.0.0"), Some("10.0.0.9"), Some("No")).unwrap();
        assert!(b.allows((Family::V4, v4("10.0.0.0"))));
        assert!(!b.allows((Family::V4, v4("10.0.0.10"))));
        assert!(!b.allows(parse_ip("::a").unwrap()));
        let single = CiliumBlock::parse(None, Some("fd00::5"), None, None).unwrap();
        assert!(single.allows(parse_ip("fd00::5").unwrap()));
        assert!(CiliumBlock::parse(None, Some("10.0.0.9"), Some("10.0.0.1"), None).is_none());
    }
}
