// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title KoalaBearPoseidon2
/// @notice Poseidon2 over KoalaBear (p = 2^31 - 2^24 + 1), 16 lanes, x^3 S-box, an external MDS first, then
///         3 full, 21 partial and 3 full rounds; the hash is Merkle-Damgard over 32-byte blocks (8 big-endian
///         32-bit limbs): h = 0, then for each block m: h = permute(h ‖ m)[8..16] + m. The parameters are
///         Linea's (linea-monorepo contracts/src/libraries/Poseidon2.sol); this is our own code (the state in
///         memory, one lane per word, the
///         lanes of each step written out), checked against Linea's published vectors by test/state.
library KoalaBearPoseidon2 {
    uint256 internal constant P = 2130706433;

    // Full-round keys, 16 lanes per round as two words of 8 big-endian 32-bit limbs (lanes 0-7, 8-15).
    uint256 private constant F0H = 52691802021506155758914962750280372212207119203515444126415105344946620971042;
    uint256 private constant F0L = 32207471970256316655474490955553459742787419335289228299095903266455798739660;
    uint256 private constant F1H = 22163791677048831312463448776400028385347383911100916908889018061663075177430;
    uint256 private constant F1L = 52176870515245694198691020358647906763460864198395806999480367588806463375956;
    uint256 private constant F2H = 20057732892593326318373784289292844513497509146673516636435948826170767804894;
    uint256 private constant F2L = 18178750968836063378915279115560606579387492034215281114134869585318875352069;
    uint256 private constant F3H = 7748602703960850726417234176553190502144764796409545305676706613632081374108;
    uint256 private constant F3L = 14236178139181542176197168604443439317755831764127965411495610808590768539130;
    uint256 private constant F4H = 4390545490380878999875851257118004037103299792992754784803412502652715488373;
    uint256 private constant F4L = 15895992674755709583772916119416271803214403026810424648839392700430632374893;
    uint256 private constant F5H = 37373517675827041221658956101645979913006475784844873469590649853964048342988;
    uint256 private constant F5L = 46010512812451809471058691124553676654818408969360806522307687423952321374687;
    // Partial-round keys (lane 0 only), 21 limbs of 32 bits, 7 per word, the first in the high bits.
    uint256 private constant PK0 = 0x102b26d026a27e02631a12ee764381a0237670af06704ee232a30b70;
    uint256 private constant PK1 = 0x74f1a6d25c2b3ab33dc9785e1af253b61070cad82d7e0ec33fb3540b;
    uint256 private constant PK2 = 0x5e3b82d3520a1a143536b508502ceafe362a42a9362c45583ecbe928;
    // The internal matrix is all ones plus diag(d), written out in partialRound below:
    // d = [-2, 1, 2, 1/2, 3, 4, -1/2, -3, -4, 1/2^8, 1/8, 1/2^24, -1/2^8, -1/8, -1/16, -1/2^24] in the field.

    error InvalidPoseidon2Input(uint256 length);

    /// @dev The permutation on 16 reduced lanes at `s` (16 words of memory).
    function _permute(uint256 s) private pure {
        assembly {
            // circ(2·M4, M4, M4, M4), M4 = [[2,3,1,1],[1,2,3,1],[1,1,2,3],[3,1,1,2]]; lanes unrolled.
            function ext(p) {
                {
                    let a := mload(add(p, 0x0))
                    let b := mload(add(p, 0x20))
                    let c := mload(add(p, 0x40))
                    let d := mload(add(p, 0x60))
                    let t01 := add(a, b)
                    let t23 := add(c, d)
                    let t0123 := add(t01, t23)
                    mstore(add(p, 0x0), mod(add(add(t01, t0123), b), P))
                    mstore(add(p, 0x20), mod(add(add(add(c, c), t0123), b), P))
                    mstore(add(p, 0x40), mod(add(add(t23, t0123), d), P))
                    mstore(add(p, 0x60), mod(add(add(add(a, a), t0123), d), P))
                }
                {
                    let a := mload(add(p, 0x80))
                    let b := mload(add(p, 0xa0))
                    let c := mload(add(p, 0xc0))
                    let d := mload(add(p, 0xe0))
                    let t01 := add(a, b)
                    let t23 := add(c, d)
                    let t0123 := add(t01, t23)
                    mstore(add(p, 0x80), mod(add(add(t01, t0123), b), P))
                    mstore(add(p, 0xa0), mod(add(add(add(c, c), t0123), b), P))
                    mstore(add(p, 0xc0), mod(add(add(t23, t0123), d), P))
                    mstore(add(p, 0xe0), mod(add(add(add(a, a), t0123), d), P))
                }
                {
                    let a := mload(add(p, 0x100))
                    let b := mload(add(p, 0x120))
                    let c := mload(add(p, 0x140))
                    let d := mload(add(p, 0x160))
                    let t01 := add(a, b)
                    let t23 := add(c, d)
                    let t0123 := add(t01, t23)
                    mstore(add(p, 0x100), mod(add(add(t01, t0123), b), P))
                    mstore(add(p, 0x120), mod(add(add(add(c, c), t0123), b), P))
                    mstore(add(p, 0x140), mod(add(add(t23, t0123), d), P))
                    mstore(add(p, 0x160), mod(add(add(add(a, a), t0123), d), P))
                }
                {
                    let a := mload(add(p, 0x180))
                    let b := mload(add(p, 0x1a0))
                    let c := mload(add(p, 0x1c0))
                    let d := mload(add(p, 0x1e0))
                    let t01 := add(a, b)
                    let t23 := add(c, d)
                    let t0123 := add(t01, t23)
                    mstore(add(p, 0x180), mod(add(add(t01, t0123), b), P))
                    mstore(add(p, 0x1a0), mod(add(add(add(c, c), t0123), b), P))
                    mstore(add(p, 0x1c0), mod(add(add(t23, t0123), d), P))
                    mstore(add(p, 0x1e0), mod(add(add(add(a, a), t0123), d), P))
                }
                {
                    let t := add(add(mload(add(p, 0x0)), mload(add(p, 0x80))), add(mload(add(p, 0x100)), mload(add(p, 0x180))))
                    mstore(add(p, 0x0), addmod(mload(add(p, 0x0)), t, P))
                    mstore(add(p, 0x80), addmod(mload(add(p, 0x80)), t, P))
                    mstore(add(p, 0x100), addmod(mload(add(p, 0x100)), t, P))
                    mstore(add(p, 0x180), addmod(mload(add(p, 0x180)), t, P))
                }
                {
                    let t := add(add(mload(add(p, 0x20)), mload(add(p, 0xa0))), add(mload(add(p, 0x120)), mload(add(p, 0x1a0))))
                    mstore(add(p, 0x20), addmod(mload(add(p, 0x20)), t, P))
                    mstore(add(p, 0xa0), addmod(mload(add(p, 0xa0)), t, P))
                    mstore(add(p, 0x120), addmod(mload(add(p, 0x120)), t, P))
                    mstore(add(p, 0x1a0), addmod(mload(add(p, 0x1a0)), t, P))
                }
                {
                    let t := add(add(mload(add(p, 0x40)), mload(add(p, 0xc0))), add(mload(add(p, 0x140)), mload(add(p, 0x1c0))))
                    mstore(add(p, 0x40), addmod(mload(add(p, 0x40)), t, P))
                    mstore(add(p, 0xc0), addmod(mload(add(p, 0xc0)), t, P))
                    mstore(add(p, 0x140), addmod(mload(add(p, 0x140)), t, P))
                    mstore(add(p, 0x1c0), addmod(mload(add(p, 0x1c0)), t, P))
                }
                {
                    let t := add(add(mload(add(p, 0x60)), mload(add(p, 0xe0))), add(mload(add(p, 0x160)), mload(add(p, 0x1e0))))
                    mstore(add(p, 0x60), addmod(mload(add(p, 0x60)), t, P))
                    mstore(add(p, 0xe0), addmod(mload(add(p, 0xe0)), t, P))
                    mstore(add(p, 0x160), addmod(mload(add(p, 0x160)), t, P))
                    mstore(add(p, 0x1e0), addmod(mload(add(p, 0x1e0)), t, P))
                }
            }
            function full(p, hi, lo) {
                {
                    let x := add(mload(add(p, 0x0)), and(shr(224, hi), 0xffffffff))
                    mstore(add(p, 0x0), mulmod(x, mulmod(x, x, P), P))
                }
                {
                    let x := add(mload(add(p, 0x20)), and(shr(192, hi), 0xffffffff))
                    mstore(add(p, 0x20), mulmod(x, mulmod(x, x, P), P))
                }
                {
                    let x := add(mload(add(p, 0x40)), and(shr(160, hi), 0xffffffff))
                    mstore(add(p, 0x40), mulmod(x, mulmod(x, x, P), P))
                }
                {
                    let x := add(mload(add(p, 0x60)), and(shr(128, hi), 0xffffffff))
                    mstore(add(p, 0x60), mulmod(x, mulmod(x, x, P), P))
                }
                {
                    let x := add(mload(add(p, 0x80)), and(shr(96, hi), 0xffffffff))
                    mstore(add(p, 0x80), mulmod(x, mulmod(x, x, P), P))
                }
                {
                    let x := add(mload(add(p, 0xa0)), and(shr(64, hi), 0xffffffff))
                    mstore(add(p, 0xa0), mulmod(x, mulmod(x, x, P), P))
                }
                {
                    let x := add(mload(add(p, 0xc0)), and(shr(32, hi), 0xffffffff))
                    mstore(add(p, 0xc0), mulmod(x, mulmod(x, x, P), P))
                }
                {
                    let x := add(mload(add(p, 0xe0)), and(shr(0, hi), 0xffffffff))
                    mstore(add(p, 0xe0), mulmod(x, mulmod(x, x, P), P))
                }
                {
                    let x := add(mload(add(p, 0x100)), and(shr(224, lo), 0xffffffff))
                    mstore(add(p, 0x100), mulmod(x, mulmod(x, x, P), P))
                }
                {
                    let x := add(mload(add(p, 0x120)), and(shr(192, lo), 0xffffffff))
                    mstore(add(p, 0x120), mulmod(x, mulmod(x, x, P), P))
                }
                {
                    let x := add(mload(add(p, 0x140)), and(shr(160, lo), 0xffffffff))
                    mstore(add(p, 0x140), mulmod(x, mulmod(x, x, P), P))
                }
                {
                    let x := add(mload(add(p, 0x160)), and(shr(128, lo), 0xffffffff))
                    mstore(add(p, 0x160), mulmod(x, mulmod(x, x, P), P))
                }
                {
                    let x := add(mload(add(p, 0x180)), and(shr(96, lo), 0xffffffff))
                    mstore(add(p, 0x180), mulmod(x, mulmod(x, x, P), P))
                }
                {
                    let x := add(mload(add(p, 0x1a0)), and(shr(64, lo), 0xffffffff))
                    mstore(add(p, 0x1a0), mulmod(x, mulmod(x, x, P), P))
                }
                {
                    let x := add(mload(add(p, 0x1c0)), and(shr(32, lo), 0xffffffff))
                    mstore(add(p, 0x1c0), mulmod(x, mulmod(x, x, P), P))
                }
                {
                    let x := add(mload(add(p, 0x1e0)), and(shr(0, lo), 0xffffffff))
                    mstore(add(p, 0x1e0), mulmod(x, mulmod(x, x, P), P))
                }
                ext(p)
            }
            // Lane i becomes sum + d_i x_i (the internal matrix: all ones plus diag(d)).
            function partialRound(p, k) {
                let x := add(mload(p), k)
                mstore(p, mulmod(x, mulmod(x, x, P), P))
                let sum := add(add(add(mload(p), mload(add(p, 0x20))), add(mload(add(p, 0x40)), mload(add(p, 0x60)))), add(add(mload(add(p, 0x80)), mload(add(p, 0xa0))), add(mload(add(p, 0xc0)), mload(add(p, 0xe0)))))
                sum := mod(add(sum, add(add(add(mload(add(p, 0x100)), mload(add(p, 0x120))), add(mload(add(p, 0x140)), mload(add(p, 0x160)))), add(add(mload(add(p, 0x180)), mload(add(p, 0x1a0))), add(mload(add(p, 0x1c0)), mload(add(p, 0x1e0)))))), P)
                mstore(add(p, 0x0), addmod(sum, mulmod(mload(add(p, 0x0)), 2130706431, P), P))
                mstore(add(p, 0x20), addmod(sum, mulmod(mload(add(p, 0x20)), 1, P), P))
                mstore(add(p, 0x40), addmod(sum, mulmod(mload(add(p, 0x40)), 2, P), P))
                mstore(add(p, 0x60), addmod(sum, mulmod(mload(add(p, 0x60)), 1065353217, P), P))
                mstore(add(p, 0x80), addmod(sum, mulmod(mload(add(p, 0x80)), 3, P), P))
                mstore(add(p, 0xa0), addmod(sum, mulmod(mload(add(p, 0xa0)), 4, P), P))
                mstore(add(p, 0xc0), addmod(sum, mulmod(mload(add(p, 0xc0)), 1065353216, P), P))
                mstore(add(p, 0xe0), addmod(sum, mulmod(mload(add(p, 0xe0)), 2130706430, P), P))
                mstore(add(p, 0x100), addmod(sum, mulmod(mload(add(p, 0x100)), 2130706429, P), P))
                mstore(add(p, 0x120), addmod(sum, mulmod(mload(add(p, 0x120)), 2122383361, P), P))
                mstore(add(p, 0x140), addmod(sum, mulmod(mload(add(p, 0x140)), 1864368129, P), P))
                mstore(add(p, 0x160), addmod(sum, mulmod(mload(add(p, 0x160)), 2130706306, P), P))
                mstore(add(p, 0x180), addmod(sum, mulmod(mload(add(p, 0x180)), 8323072, P), P))
                mstore(add(p, 0x1a0), addmod(sum, mulmod(mload(add(p, 0x1a0)), 266338304, P), P))
                mstore(add(p, 0x1c0), addmod(sum, mulmod(mload(add(p, 0x1c0)), 133169152, P), P))
                mstore(add(p, 0x1e0), addmod(sum, mulmod(mload(add(p, 0x1e0)), 127, P), P))
            }
            ext(s)
            full(s, F0H, F0L)
            full(s, F1H, F1L)
            full(s, F2H, F2L)
            for { let r := 0 } lt(r, 21) { r := add(r, 1) } {
                let w := PK0
                if eq(div(r, 7), 1) { w := PK1 }
                if eq(div(r, 7), 2) { w := PK2 }
                partialRound(s, and(shr(mul(32, sub(6, mod(r, 7))), w), 0xffffffff))
            }
            full(s, F3H, F3L)
            full(s, F4H, F4L)
            full(s, F5H, F5L)
        }
    }

    /// @notice Linea's Poseidon2 hash of a non-empty multiple of 32 bytes.
    function hash(bytes memory data) internal pure returns (bytes32 out) {
        if (data.length == 0 || data.length % 32 != 0) revert InvalidPoseidon2Input(data.length);
        uint256[16] memory state;
        uint256 s;
        uint256 h;
        assembly {
            s := state
        }
        for (uint256 off = 0; off < data.length; off += 32) {
            uint256 m;
            assembly {
                m := mload(add(add(data, 0x20), off))
                for { let i := 0 } lt(i, 8) { i := add(i, 1) } {
                    let sh := sub(224, mul(32, i))
                    mstore(add(s, mul(i, 0x20)), and(shr(sh, h), 0xffffffff))
                    mstore(add(s, mul(add(i, 8), 0x20)), mod(and(shr(sh, m), 0xffffffff), P))
                }
            }
            _permute(s);
            assembly {
                h := 0
                for { let i := 0 } lt(i, 8) { i := add(i, 1) } {
                    let sh := sub(224, mul(32, i))
                    h := or(h, shl(sh, addmod(mload(add(s, mul(add(i, 8), 0x20))), and(shr(sh, m), 0xffffffff), P)))
                }
            }
        }
        out = bytes32(h);
    }

    /// @notice A 32-byte word as 64 bytes: each 2 bytes left-padded with 2 zero bytes (a limb below p).
    function spread(bytes32 w) internal pure returns (bytes memory out) {
        out = new bytes(64);
        for (uint256 i = 0; i < 32; i += 2) {
            out[2 * i + 2] = w[i];
            out[2 * i + 3] = w[i + 1];
        }
    }
}
