// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import { KoalaBearPoseidon2 } from "./KoalaBearPoseidon2.sol";
import { SparseMerkleTreeVerifierBase } from "./SparseMerkleTreeVerifierBase.sol";

/// @title Poseidon2SparseMerkleProofVerifier
/// @notice svc_getProof proofs of the L2 state tree with STATE_HASH=poseidon2 (Linea's format), on L1.
///         A 32-byte word that may exceed the field is "spread": 16 limbs of 2 bytes, each left-padded to 4 (64 B).
///         Root node 96 B (spread(nextFreeNode) ‖ subRoot), leaf opening 192 B (spread(prev) ‖ spread(next) ‖ hKey ‖
///         hValue), empty sibling leaf 32 zero bytes. Account hKey = H(s[0:32] ‖ 0^24 ‖ s[32:40]) with s the spread
///         address; storage hKey = H(spread(slot)); storage hValue = H(spread(value)); account hValue =
///         H(spread(nonce) ‖ spread(balance) ‖ storageRoot ‖ codeHash ‖ spread(keccakCodeHash) ‖ spread(codeSize)).
contract Poseidon2SparseMerkleProofVerifier is SparseMerkleTreeVerifierBase {
    uint256 internal constant ROOT_LENGTH = 96;
    uint256 internal constant LEAF_LENGTH = 192;

    function _hash(bytes memory data) internal pure override returns (bytes32) {
        return KoalaBearPoseidon2.hash(data);
    }

    function _lengths() internal pure override returns (uint256, uint256, uint256) {
        return (ROOT_LENGTH, LEAF_LENGTH, 32);
    }

    /// @dev The 2-byte payload of each 4-byte limb of a spread word, joined (the padding bytes are not read).
    function _unspread(bytes calldata b) private pure returns (uint256 n) {
        for (uint256 i = 0; i < 64; i += 4) n = (n << 16) | (uint256(uint8(b[i + 2])) << 8) | uint256(uint8(b[i + 3]));
    }

    function _nextFreeNode(bytes calldata rootNode) internal pure override returns (uint256) {
        return _unspread(rootNode[0:64]);
    }

    /// @notice Decodes a 192-byte leaf opening.
    function getLeaf(bytes calldata opening) public pure override returns (Leaf memory leaf) {
        if (opening.length != LEAF_LENGTH) revert InvalidLeafOpening(opening.length);
        leaf.prev = _unspread(opening[0:64]);
        leaf.next = _unspread(opening[64:128]);
        leaf.hKey = bytes32(opening[128:160]);
        leaf.hValue = bytes32(opening[160:192]);
    }

    function poseidon2(bytes calldata data) external pure returns (bytes32) {
        return KoalaBearPoseidon2.hash(data);
    }

    function accountHKey(address account) public pure override returns (bytes32) {
        bytes memory s = KoalaBearPoseidon2.spread(bytes32(bytes20(account)));
        bytes32 first;
        uint256 second;
        assembly {
            first := mload(add(s, 0x20))
            second := mload(add(s, 0x40))
        }
        return KoalaBearPoseidon2.hash(abi.encodePacked(first, second >> 192));
    }

    function storageHKey(bytes32 slot) public pure override returns (bytes32) {
        return KoalaBearPoseidon2.hash(KoalaBearPoseidon2.spread(slot));
    }

    function accountHValue(bytes calldata value) public pure override returns (bytes32) {
        if (value.length != ACCOUNT_VALUE_LENGTH) revert InvalidAccountValue(value.length);
        return KoalaBearPoseidon2.hash(
            abi.encodePacked(
                KoalaBearPoseidon2.spread(bytes32(value[0:32])),
                KoalaBearPoseidon2.spread(bytes32(value[32:64])),
                value[64:128],
                KoalaBearPoseidon2.spread(bytes32(value[128:160])),
                KoalaBearPoseidon2.spread(bytes32(value[160:192]))
            )
        );
    }

    function storageHValue(bytes32 value) public pure override returns (bytes32) {
        return KoalaBearPoseidon2.hash(KoalaBearPoseidon2.spread(value));
    }
}
