// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {MessageServiceBase} from "./messaging/MessageServiceBase.sol";
import {RateLimiter} from "./messaging/RateLimiter.sol";
import {MessageHashing} from "./messaging/MessageHashing.sol";
import {MessageMerkleProof} from "./messaging/MessageMerkleProof.sol";

/// @title L1MessageService
/// @notice Devnet L1 side of the message bridge.
///         - L1→L2: `sendMessage` numbers, hashes and announces a message and extends the rolling hash the
///           coordinator proves on L2 when it anchors the hashes there.
///         - L2 finalization: the operator (the devnet coordinator) records the finalized L2 block, its state
///           root, the Merkle roots of the L2 messages of the range and the L2 blocks that hold messages.
///         - L2→L1: anyone (normally the relayer) claims a message with a Merkle proof against a stored root,
///           subject to a per-period withdrawal limit.
contract L1MessageService is MessageServiceBase, RateLimiter {
    /// @dev Field order is part of the ABI (`claimMessageWithProof((bytes32[],uint256,uint32,address,...))`).
    struct ClaimMessageWithProofParams {
        bytes32[] proof;
        uint256 messageNumber;
        uint32 leafIndex;
        address from;
        address to;
        uint256 fee;
        uint256 value;
        address feeRecipient;
        bytes32 merkleRoot;
        bytes data;
    }

    /// @dev `leafIndex` is a uint32, so a deeper tree could not address all its leaves.
    uint256 internal constant MAX_TREE_DEPTH = 32;

    /// @notice Account allowed to finalize L2 blocks (the devnet coordinator).
    address public operator;
    /// @notice Last L2 block finalized on L1 (0 before the first finalization).
    uint256 public currentL2BlockNumber;
    /// @notice State root of each finalized L2 block, as submitted by the operator (may be 0 when no state
    ///         manager runs).
    mapping(uint256 => bytes32) public stateRootHashes;
    /// @notice Depth of each anchored L2 message Merkle root; 0 means the root is unknown.
    mapping(bytes32 => uint256) public l2MerkleRootsDepths;
    /// @notice Rolling hash after L1→L2 message number n (see MessageHashing.nextRollingHash); index 0 is 0.
    mapping(uint256 => bytes32) public rollingHashes;
    /// @notice Message number of each L1→L2 message hash sent here (0 = not sent from this contract).
    mapping(bytes32 => uint256) public sentMessageHashToNumber;
    /// @dev Claimed L2→L1 message numbers, one bit each (256 per slot keeps claims cheap).
    mapping(uint256 => uint256) private _claimedBitmap;

    event OperatorChanged(address indexed previousOperator, address indexed newOperator);
    /// @dev L1 variant of the rolling-hash event: also indexes the message hash so the coordinator can read
    ///      (number, rolling hash, message hash) from one log.
    event RollingHashUpdated(uint256 indexed messageNumber, bytes32 indexed rollingHash, bytes32 indexed messageHash);
    event L2MerkleRootAdded(bytes32 indexed l2MerkleRoot, uint256 indexed treeDepth);
    event L2MessagingBlockAnchored(uint256 indexed l2Block);
    event BlocksFinalized(uint256 indexed lastFinalizedBlock, uint256 indexed finalizedBlock, bytes32 finalStateRoot);

    error CallerIsNotTheOperator(address caller);
    error FinalBlockNotAfterCurrent(uint256 finalBlock, uint256 currentBlock);
    error InvalidTreeDepth(uint256 treeDepth);
    error L2MerkleRootAlreadyAnchored(bytes32 merkleRoot);
    error InvalidMessagingBlock(uint256 l2Block);
    error L2MerkleRootDoesNotExist();
    error ProofLengthDifferentThanMerkleDepth(uint256 actual, uint256 expected);
    error LeafIndexOutOfBounds(uint32 leafIndex, uint256 leafCount);
    error MessageAlreadyClaimed(uint256 messageNumber);
    error InvalidMerkleProof();

    modifier onlyOperator() {
        if (msg.sender != operator) revert CallerIsNotTheOperator(msg.sender);
        _;
    }

    /// @param _operator account allowed to call `finalizeBlocks`
    /// @param _periodInSeconds rate-limit period length (must be > 0)
    /// @param _limitInWei maximum fee + value paid out by claims per period
    constructor(address _operator, uint256 _periodInSeconds, uint256 _limitInWei)
        RateLimiter(_periodInSeconds, _limitInWei)
    {
        if (_operator == address(0)) revert ZeroAddressNotAllowed();
        operator = _operator;
        emit OperatorChanged(address(0), _operator);
    }

    function setOperator(address _operator) external onlyOwner {
        if (_operator == address(0)) revert ZeroAddressNotAllowed();
        emit OperatorChanged(operator, _operator);
        operator = _operator;
    }

    /// @notice Sends a message to L2: `msg.value` must cover `_fee`; the rest is the value delivered to `_to`.
    function sendMessage(address _to, uint256 _fee, bytes calldata _calldata) external payable {
        (uint256 messageNumber, bytes32 messageHash) = _sendMessage(_to, _fee, _calldata);
        bytes32 rollingHash = MessageHashing.nextRollingHash(rollingHashes[messageNumber - 1], messageHash);
        rollingHashes[messageNumber] = rollingHash;
        sentMessageHashToNumber[messageHash] = messageNumber;
        emit RollingHashUpdated(messageNumber, rollingHash, messageHash);
    }

    /// @notice Finalizes L2 blocks (currentL2BlockNumber, _finalL2BlockNumber].
    /// @param _finalL2BlockNumber last L2 block of the range; becomes `currentL2BlockNumber`
    /// @param _finalStateRootHash state root of that block, stored in `stateRootHashes`
    /// @param _l2MerkleRoots roots of the message trees of the range (one per chunk of 2^depth messages)
    /// @param _treeDepth depth of every root of this call (1..32 when roots are given)
    /// @param _l2MessagingBlocks L2 blocks of the range holding messages, strictly increasing
    function finalizeBlocks(
        uint256 _finalL2BlockNumber,
        bytes32 _finalStateRootHash,
        bytes32[] calldata _l2MerkleRoots,
        uint256 _treeDepth,
        uint256[] calldata _l2MessagingBlocks
    ) external onlyOperator {
        uint256 lastFinalized = currentL2BlockNumber;
        if (_finalL2BlockNumber <= lastFinalized) revert FinalBlockNotAfterCurrent(_finalL2BlockNumber, lastFinalized);

        if (_l2MerkleRoots.length > 0 && (_treeDepth == 0 || _treeDepth > MAX_TREE_DEPTH)) {
            revert InvalidTreeDepth(_treeDepth);
        }
        for (uint256 i = 0; i < _l2MerkleRoots.length; ++i) {
            bytes32 root = _l2MerkleRoots[i];
            // A root never repeats (message numbers are in the leaves); a repeat would mean a replayed batch.
            if (l2MerkleRootsDepths[root] != 0) revert L2MerkleRootAlreadyAnchored(root);
            l2MerkleRootsDepths[root] = _treeDepth;
            emit L2MerkleRootAdded(root, _treeDepth);
        }

        uint256 previousBlock = lastFinalized;
        for (uint256 i = 0; i < _l2MessagingBlocks.length; ++i) {
            uint256 l2Block = _l2MessagingBlocks[i];
            // Inside the range and strictly increasing (the first check also covers "> last finalized").
            if (l2Block <= previousBlock || l2Block > _finalL2BlockNumber) revert InvalidMessagingBlock(l2Block);
            previousBlock = l2Block;
            emit L2MessagingBlockAnchored(l2Block);
        }

        currentL2BlockNumber = _finalL2BlockNumber;
        stateRootHashes[_finalL2BlockNumber] = _finalStateRootHash;
        emit BlocksFinalized(lastFinalized, _finalL2BlockNumber, _finalStateRootHash);
    }

    /// @notice Claims an L2→L1 message with a Merkle proof of its hash under an anchored root, then delivers
    ///         it (value + calldata to `to`, fee to `feeRecipient` or the caller).
    function claimMessageWithProof(ClaimMessageWithProofParams calldata _params) external nonReentrant {
        uint256 depth = l2MerkleRootsDepths[_params.merkleRoot];
        if (depth == 0) revert L2MerkleRootDoesNotExist();
        if (_params.proof.length != depth) revert ProofLengthDifferentThanMerkleDepth(_params.proof.length, depth);
        uint256 leafCount = uint256(1) << depth;
        if (_params.leafIndex >= leafCount) revert LeafIndexOutOfBounds(_params.leafIndex, leafCount);
        if (isMessageClaimed(_params.messageNumber)) revert MessageAlreadyClaimed(_params.messageNumber);

        bytes32 messageHash = MessageHashing.hashMessage(
            _params.from, _params.to, _params.fee, _params.value, _params.messageNumber, _params.data
        );
        if (!MessageMerkleProof.verify(_params.proof, _params.leafIndex, messageHash, _params.merkleRoot)) {
            revert InvalidMerkleProof();
        }

        // Effects before the external call: claimed flag and rate-limit accounting.
        _claimedBitmap[_params.messageNumber >> 8] |= uint256(1) << (_params.messageNumber & 0xff);
        _addUsedAmount(_params.fee + _params.value);

        _deliver(_params.to, _params.fee, _params.value, _params.feeRecipient, _params.data);
        emit MessageClaimed(messageHash);
    }

    /// @notice Whether the L2→L1 message with this number has been claimed here.
    function isMessageClaimed(uint256 _messageNumber) public view returns (bool) {
        return (_claimedBitmap[_messageNumber >> 8] >> (_messageNumber & 0xff)) & 1 == 1;
    }
}
