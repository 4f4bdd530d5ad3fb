// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import { SparseMerkleTreeVerifierBase } from "./SparseMerkleTreeVerifierBase.sol";

/// @title SparseMerkleProofVerifier
/// @notice svc_getProof proofs of the L2 state tree with STATE_HASH=keccak (our own encodings), on L1.
///         Root node 64 B (nextFreeNode ‖ subRoot), leaf opening 128 B (prevLeafIndex ‖ nextLeafIndex ‖ hKey ‖
///         hValue, 32-byte words), empty sibling leaf 128 zero bytes. Account hKey = keccak256(abi.encode(address)),
///         storage hKey = keccak256(slot); hValue = keccak256(value) with the 192-byte account value (nonce,
///         balance, storageRoot, codeHash, keccakCodeHash, codeSize) or the 32-byte slot value.
contract SparseMerkleProofVerifier is SparseMerkleTreeVerifierBase {
    uint256 internal constant LEAF_LENGTH = 128;

    function _hash(bytes memory data) internal pure override returns (bytes32) {
        return keccak256(data);
    }

    function _lengths() internal pure override returns (uint256, uint256, uint256) {
        return (NODE_LENGTH, LEAF_LENGTH, LEAF_LENGTH);
    }

    function _nextFreeNode(bytes calldata rootNode) internal pure override returns (uint256) {
        return uint256(bytes32(rootNode[0:32]));
    }

    /// @notice Decodes a 128-byte leaf opening.
    function getLeaf(bytes calldata opening) public pure override returns (Leaf memory leaf) {
        if (opening.length != LEAF_LENGTH) revert InvalidLeafOpening(opening.length);
        leaf.prev = uint256(bytes32(opening[0:32]));
        leaf.next = uint256(bytes32(opening[32:64]));
        leaf.hKey = bytes32(opening[64:96]);
        leaf.hValue = bytes32(opening[96:128]);
    }

    function accountHKey(address account) public pure override returns (bytes32) {
        return keccak256(abi.encode(account));
    }

    function storageHKey(bytes32 slot) public pure override returns (bytes32) {
        return keccak256(abi.encode(slot));
    }

    function accountHValue(bytes calldata value) public pure override returns (bytes32) {
        return keccak256(value);
    }

    function storageHValue(bytes32 value) public pure override returns (bytes32) {
        return keccak256(abi.encode(value));
    }
}
