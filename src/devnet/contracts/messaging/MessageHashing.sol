// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title MessageHashing
/// @notice The two hash definitions shared by L1, L2, the coordinator and the relayer. They are the
///         cross-chain contract: a message sent on one chain is recognised on the other only when both
///         sides compute exactly these values.
library MessageHashing {
    /// @notice Message hash = keccak256(abi.encode(from, to, fee, value, nonce, calldata)).
    /// @dev Standard ABI encoding (head of six words, `calldata` as a dynamic `bytes` at offset 0xc0), so
    ///      off-chain code reproduces it with a plain `encodeAbiParameters`/`AbiCoder.encode` call.
    function hashMessage(
        address _from,
        address _to,
        uint256 _fee,
        uint256 _value,
        uint256 _nonce,
        bytes calldata _calldata
    ) internal pure returns (bytes32) {
        return keccak256(abi.encode(_from, _to, _fee, _value, _nonce, _calldata));
    }

    /// @notice Rolling hash step: rollingHash[n] = keccak256(abi.encode(rollingHash[n - 1], messageHash[n])),
    ///         with rollingHash[0] = 0 and message numbers starting at 1.
    /// @dev L1 computes it when a message is sent; L2 recomputes it over an anchored batch, so an anchoring
    ///      that skips, reorders or invents a message is rejected.
    function nextRollingHash(bytes32 _previousRollingHash, bytes32 _messageHash) internal pure returns (bytes32) {
        return keccak256(abi.encode(_previousRollingHash, _messageHash));
    }
}
