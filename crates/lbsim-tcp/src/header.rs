//! The TCP header as the simulator carries it. Sequence numbers are 64-bit
//! byte offsets starting at 0 for the first payload byte (no wrap-around,
//! and SYN/FIN occupy no sequence space): a simplification that changes no
//! dynamics.

use lbsim_engine::SimTime;

pub const SYN: u8 = 1;
pub const ACK: u8 = 2;
/// ECN-Echo (RFC 3168 §6.1.3).
pub const ECE: u8 = 4;
/// Congestion Window Reduced (RFC 3168 §6.1.2).
pub const CWR: u8 = 8;

/// Maximum SACK blocks per ACK: 3 fit beside the timestamp option (RFC 2018 §3).
pub const MAX_SACK_BLOCKS: usize = 3;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpHeader {
    /// First payload byte (for SYN: 0).
    pub seq: u64,
    /// Cumulative acknowledgement: next byte expected (valid with `ACK`).
    pub ack: u64,
    /// Payload bytes.
    pub len: u32,
    pub flags: u8,
    /// Advertised receive window, bytes (the window-scale option is implied).
    pub wnd: u32,
    /// Timestamp option (RFC 7323): sender's clock when sent, and the echo.
    pub ts_val: SimTime,
    pub ts_ecr: SimTime,
    pub sack: [(u64, u64); MAX_SACK_BLOCKS],
    pub n_sack: u8,
    /// MPTCP data sequence number of the first payload byte (DSS option);
    /// equal to `seq` for plain TCP.
    pub dsn: u64,
}

impl TcpHeader {
    #[inline]
    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }
    pub fn sack_blocks(&self) -> &[(u64, u64)] {
        &self.sack[..self.n_sack as usize]
    }
    /// Option bytes beyond the fixed header for the SACK blocks this header
    /// carries (2 bytes kind/length + 8 per block, padded to 4).
    pub fn sack_option_bytes(&self) -> u32 {
        if self.n_sack == 0 {
            0
        } else {
            (2 + 8 * self.n_sack as u32).div_ceil(4) * 4
        }
    }
}
