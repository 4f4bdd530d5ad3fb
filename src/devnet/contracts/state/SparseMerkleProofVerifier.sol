// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @dev The part of the L1 message service this verifier reads: the state root stored at finalization.
interface IFinalizedStateRoots {
    function stateRootHashes(uint256 l2Block) external view returns (bytes32);
}

/// @title SparseMerkleProofVerifier
/// @notice Checks svc_getProof proofs of the L2 state tree (keccak256, depth 40) on L1.
///         A proof is 42 byte strings: the root node (nextFreeNode ‖ subRoot, 64 B), the sibling nodes from
///         depth 1 to 39 (leftHash ‖ rightHash, 64 B each), the sibling leaf opening (128 B, all zero when the
///         sibling is empty) and the leaf opening (prevLeafIndex ‖ nextLeafIndex ‖ hKey ‖ hValue, 128 B).
///         Account hKey = keccak256(abi.encode(address)), storage hKey = keccak256(slot); hValue = keccak256(value)
///         with the 192-byte account value (nonce, balance, storageRoot, codeHash, keccakCodeHash, codeSize) or
///         the 32-byte slot value. Absence is proved by the two neighbours in the list sorted by hKey.
contract SparseMerkleProofVerifier {
    uint256 public constant TREE_DEPTH = 40;
    uint256 public constant PROOF_LENGTH = 42;
    uint256 internal constant NODE_LENGTH = 64;
    uint256 internal constant LEAF_LENGTH = 128;
    uint256 internal constant ACCOUNT_VALUE_LENGTH = 192;

    struct Leaf {
        uint256 prev;
        uint256 next;
        bytes32 hKey;
        bytes32 hValue;
    }

    error InvalidLeafOpening(uint256 length);
    error InvalidAccountValue(uint256 length);

    /// @notice Decodes a 128-byte leaf opening.
    function getLeaf(bytes calldata opening) public pure returns (Leaf memory leaf) {
        if (opening.length != LEAF_LENGTH) revert InvalidLeafOpening(opening.length);
        leaf.prev = uint256(bytes32(opening[0:32]));
        leaf.next = uint256(bytes32(opening[32:64]));
        leaf.hKey = bytes32(opening[64:96]);
        leaf.hValue = bytes32(opening[96:128]);
    }

    /// @notice True when the 42 entries lead from the leaf at `leafIndex` to `root`.
    function verifyProof(bytes[] calldata proof, uint256 leafIndex, bytes32 root) public pure returns (bool) {
        if (proof.length != PROOF_LENGTH || leafIndex >= (1 << TREE_DEPTH)) return false;
        if (proof[0].length != NODE_LENGTH || proof[TREE_DEPTH].length != LEAF_LENGTH || proof[TREE_DEPTH + 1].length != LEAF_LENGTH) return false;
        if (_isZero(proof[TREE_DEPTH + 1])) return false;
        if (leafIndex >= uint256(bytes32(proof[0][0:32]))) return false;
        bytes32 cur = keccak256(proof[TREE_DEPTH + 1]);
        for (uint256 level = 0; level < TREE_DEPTH; ++level) {
            bytes calldata entry = proof[TREE_DEPTH - level];
            if (level > 0 && entry.length != NODE_LENGTH) return false;
            bytes32 sibling = (level == 0 && _isZero(entry)) ? bytes32(0) : keccak256(entry);
            cur = ((leafIndex >> level) & 1) == 1 ? keccak256(abi.encodePacked(sibling, cur)) : keccak256(abi.encodePacked(cur, sibling));
        }
        if (cur != bytes32(proof[0][32:64])) return false;
        return keccak256(proof[0]) == root;
    }

    /// @notice True when the tree under `root` holds `hKey` with `hValue` at `leafIndex`.
    function verifyInclusion(bytes[] calldata proof, uint256 leafIndex, bytes32 root, bytes32 hKey, bytes32 hValue) public pure returns (bool) {
        if (!verifyProof(proof, leafIndex, root)) return false;
        Leaf memory leaf = getLeaf(proof[TREE_DEPTH + 1]);
        return leaf.hKey == hKey && leaf.hValue == hValue;
    }

    /// @notice True when `hKey` is absent: both neighbours are in the tree, adjacent, and around `hKey`.
    function verifyNonInclusion(
        bytes[] calldata leftProof,
        uint256 leftLeafIndex,
        bytes[] calldata rightProof,
        uint256 rightLeafIndex,
        bytes32 root,
        bytes32 hKey
    ) public pure returns (bool) {
        if (!verifyProof(leftProof, leftLeafIndex, root) || !verifyProof(rightProof, rightLeafIndex, root)) return false;
        Leaf memory left = getLeaf(leftProof[TREE_DEPTH + 1]);
        Leaf memory right = getLeaf(rightProof[TREE_DEPTH + 1]);
        return left.next == rightLeafIndex && right.prev == leftLeafIndex && uint256(left.hKey) < uint256(hKey) && uint256(hKey) < uint256(right.hKey);
    }

    function accountHKey(address account) public pure returns (bytes32) {
        return keccak256(abi.encode(account));
    }

    function storageHKey(bytes32 slot) public pure returns (bytes32) {
        return keccak256(abi.encode(slot));
    }

    function verifyAccount(bytes[] calldata proof, uint256 leafIndex, bytes32 root, address account, bytes calldata value) public pure returns (bool) {
        if (value.length != ACCOUNT_VALUE_LENGTH) return false;
        return verifyInclusion(proof, leafIndex, root, accountHKey(account), keccak256(value));
    }

    function verifyStorage(bytes[] calldata proof, uint256 leafIndex, bytes32 storageRoot, bytes32 slot, bytes32 value) public pure returns (bool) {
        return verifyInclusion(proof, leafIndex, storageRoot, storageHKey(slot), keccak256(abi.encode(value)));
    }

    function verifyAccountAbsent(
        bytes[] calldata leftProof,
        uint256 leftLeafIndex,
        bytes[] calldata rightProof,
        uint256 rightLeafIndex,
        bytes32 root,
        address account
    ) public pure returns (bool) {
        return verifyNonInclusion(leftProof, leftLeafIndex, rightProof, rightLeafIndex, root, accountHKey(account));
    }

    function verifyStorageAbsent(
        bytes[] calldata leftProof,
        uint256 leftLeafIndex,
        bytes[] calldata rightProof,
        uint256 rightLeafIndex,
        bytes32 storageRoot,
        bytes32 slot
    ) public pure returns (bool) {
        return verifyNonInclusion(leftProof, leftLeafIndex, rightProof, rightLeafIndex, storageRoot, storageHKey(slot));
    }

    /// @notice The storage root inside a 192-byte account value (to check the account's storage proofs).
    function storageRootOf(bytes calldata value) public pure returns (bytes32) {
        if (value.length != ACCOUNT_VALUE_LENGTH) revert InvalidAccountValue(value.length);
        return bytes32(value[64:96]);
    }

    /// @notice `verifyAccount` against the state root the message service stored when it finalized `l2Block`.
    function verifyAccountAtFinalizedBlock(
        IFinalizedStateRoots messageService,
        uint256 l2Block,
        bytes[] calldata proof,
        uint256 leafIndex,
        address account,
        bytes calldata value
    ) external view returns (bool) {
        bytes32 root = messageService.stateRootHashes(l2Block);
        return root != bytes32(0) && verifyAccount(proof, leafIndex, root, account, value);
    }

    /// @notice `verifyAccountAbsent` against the state root stored when `l2Block` was finalized.
    function verifyAccountAbsentAtFinalizedBlock(
        IFinalizedStateRoots messageService,
        uint256 l2Block,
        bytes[] calldata leftProof,
        uint256 leftLeafIndex,
        bytes[] calldata rightProof,
        uint256 rightLeafIndex,
        address account
    ) external view returns (bool) {
        bytes32 root = messageService.stateRootHashes(l2Block);
        return root != bytes32(0) && verifyAccountAbsent(leftProof, leftLeafIndex, rightProof, rightLeafIndex, root, account);
    }

    function _isZero(bytes calldata b) private pure returns (bool) {
        for (uint256 i = 0; i < b.length; i += 32) {
            if (bytes32(b[i:i + 32]) != bytes32(0)) return false;
        }
        return true;
    }
}
