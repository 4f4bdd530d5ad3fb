// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title MessageMerkleProof
/// @notice Verifies that an L2 message hash is a leaf of a fixed-depth binary Merkle tree of message hashes
///         (the tree the coordinator commits on L1 at finalization).
/// @dev Conventions (the relayer builds proofs with the same ones):
///      - leaves are the message hashes themselves, in message order, the chunk padded with bytes32(0);
///      - node = keccak256(left ‖ right), both 32-byte words concatenated (abi.encodePacked);
///      - `_proof[0]` is the sibling at the leaf level, `_proof[depth - 1]` the child of the root;
///      - bit i of `_leafIndex` (least significant first) is 0 when the running node is the left child at
///        level i, 1 when it is the right child.
///      Not to be confused with the state sparse-Merkle verifier of the state manager (different tree).
library MessageMerkleProof {
    function computeRoot(bytes32[] calldata _proof, uint32 _leafIndex, bytes32 _leaf) internal pure returns (bytes32 node) {
        node = _leaf;
        uint256 index = _leafIndex;
        for (uint256 i = 0; i < _proof.length; ++i) {
            node = (index & 1) == 0 ? _hashPair(node, _proof[i]) : _hashPair(_proof[i], node);
            index >>= 1;
        }
    }

    function verify(bytes32[] calldata _proof, uint32 _leafIndex, bytes32 _leaf, bytes32 _root) internal pure returns (bool) {
        return computeRoot(_proof, _leafIndex, _leaf) == _root;
    }

    /// @dev keccak256 of the 64 bytes left ‖ right, written in assembly to avoid a memory allocation per level.
    function _hashPair(bytes32 _left, bytes32 _right) private pure returns (bytes32 result) {
        assembly {
            mstore(0x00, _left)
            mstore(0x20, _right)
            result := keccak256(0x00, 0x40)
        }
    }
}
