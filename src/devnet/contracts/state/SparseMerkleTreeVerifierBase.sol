// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @dev The part of the L1 message service this verifier reads: the state root stored at finalization.
interface IFinalizedStateRoots {
    function stateRootHashes(uint256 l2Block) external view returns (bytes32);
}

/// @title SparseMerkleTreeVerifierBase
/// @notice The tree's algorithm, shared by both hashes (STATE_HASH): depth 40, 42 proof entries (the root node
///         nextFreeNode ‖ subRoot, the sibling nodes from depth 1 to 39 as leftHash ‖ rightHash of 64 B, the
///         sibling leaf opening, all zero when that leaf is empty, and the leaf opening prev ‖ next ‖ hKey ‖ hValue).
///         The hash and how indices, keys and values are encoded come from the concrete verifier.
///         Absence is proved by the two neighbours in the list sorted by hKey.
abstract contract SparseMerkleTreeVerifierBase {
    uint256 public constant TREE_DEPTH = 40;
    uint256 public constant PROOF_LENGTH = 42;
    uint256 internal constant NODE_LENGTH = 64;
    uint256 internal constant ACCOUNT_VALUE_LENGTH = 192;

    struct Leaf {
        uint256 prev;
        uint256 next;
        bytes32 hKey;
        bytes32 hValue;
    }

    error InvalidLeafOpening(uint256 length);
    error InvalidAccountValue(uint256 length);

    function _hash(bytes memory data) internal pure virtual returns (bytes32);

    /// @dev Lengths of the root node, a leaf opening and an empty sibling leaf in a proof.
    function _lengths() internal pure virtual returns (uint256 rootNode, uint256 leaf, uint256 emptyLeaf);

    /// @dev nextFreeNode from the root node (type(uint256).max when it is not a valid encoding).
    function _nextFreeNode(bytes calldata rootNode) internal pure virtual returns (uint256);

    function getLeaf(bytes calldata opening) public pure virtual returns (Leaf memory leaf);

    function accountHKey(address account) public pure virtual returns (bytes32);

    function storageHKey(bytes32 slot) public pure virtual returns (bytes32);

    function accountHValue(bytes calldata value) public pure virtual returns (bytes32);

    function storageHValue(bytes32 value) public pure virtual returns (bytes32);

    /// @notice True when the 42 entries lead from the leaf at `leafIndex` to `root`.
    function verifyProof(bytes[] calldata proof, uint256 leafIndex, bytes32 root) public pure returns (bool) {
        if (proof.length != PROOF_LENGTH || leafIndex >= (1 << TREE_DEPTH)) return false;
        (bool wellFormed, bool siblingEmpty) = _shape(proof);
        if (!wellFormed || leafIndex >= _nextFreeNode(proof[0])) return false;
        bytes calldata rootNode = proof[0];
        bytes32 subRoot = bytes32(rootNode[rootNode.length - 32:rootNode.length]);
        return _walk(proof, leafIndex, siblingEmpty) == subRoot && _hash(rootNode) == root;
    }

    /// @dev Entry lengths as the hash's encoding says; whether the sibling leaf is empty.
    function _shape(bytes[] calldata proof) private pure returns (bool wellFormed, bool siblingEmpty) {
        (uint256 rootLength, uint256 leafLength, uint256 emptyLength) = _lengths();
        bytes calldata sib = proof[TREE_DEPTH];
        siblingEmpty = sib.length == emptyLength && _isZero(sib);
        if (proof[0].length != rootLength || proof[TREE_DEPTH + 1].length != leafLength) return (false, siblingEmpty);
        if (!siblingEmpty && sib.length != leafLength) return (false, siblingEmpty);
        if (_isZero(proof[TREE_DEPTH + 1])) return (false, siblingEmpty);
        for (uint256 i = 1; i < TREE_DEPTH; ++i) if (proof[i].length != NODE_LENGTH) return (false, siblingEmpty);
        return (true, siblingEmpty);
    }

    /// @dev The sub-root the path from the leaf leads to.
    function _walk(bytes[] calldata proof, uint256 leafIndex, bool siblingEmpty) private pure returns (bytes32 cur) {
        cur = _hash(proof[TREE_DEPTH + 1]);
        for (uint256 level = 0; level < TREE_DEPTH; ++level) {
            bytes32 sibling = (level == 0 && siblingEmpty) ? bytes32(0) : _hash(proof[TREE_DEPTH - level]);
            cur = ((leafIndex >> level) & 1) == 1 ? _hash(abi.encodePacked(sibling, cur)) : _hash(abi.encodePacked(cur, sibling));
        }
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

    function verifyAccount(bytes[] calldata proof, uint256 leafIndex, bytes32 root, address account, bytes calldata value) public pure returns (bool) {
        if (value.length != ACCOUNT_VALUE_LENGTH) return false;
        return verifyInclusion(proof, leafIndex, root, accountHKey(account), accountHValue(value));
    }

    function verifyStorage(bytes[] calldata proof, uint256 leafIndex, bytes32 storageRoot, bytes32 slot, bytes32 value) public pure returns (bool) {
        return verifyInclusion(proof, leafIndex, storageRoot, storageHKey(slot), storageHValue(value));
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

    function _isZero(bytes calldata b) internal pure returns (bool) {
        for (uint256 i = 0; i + 32 <= b.length; i += 32) {
            if (bytes32(b[i:i + 32]) != bytes32(0)) return false;
        }
        return true;
    }
}
