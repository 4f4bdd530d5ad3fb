// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {MessageServiceBase} from "./messaging/MessageServiceBase.sol";
import {MessageHashing} from "./messaging/MessageHashing.sol";

/// @title L2MessageService
/// @notice Devnet L2 side of the message bridge.
///         - L2→L1: `sendMessage` (with a minimum fee) numbers, hashes and announces a message; the
///           coordinator later commits the hashes on L1 in Merkle roots.
///         - L1→L2: the L1→L2 message setter (the devnet coordinator) anchors batches of L1 message hashes,
///           proven complete and in order by the L1 rolling hash; anyone (normally the relayer) then claims
///           an anchored message with `claimMessage`.
contract L2MessageService is MessageServiceBase {
    /// @dev Values of `inboxL1L2MessageStatus`.
    uint256 internal constant INBOX_STATUS_UNKNOWN = 0;
    uint256 internal constant INBOX_STATUS_RECEIVED = 1;
    uint256 internal constant INBOX_STATUS_CLAIMED = 2;
    /// @dev Bounds the gas of one anchoring transaction.
    uint256 internal constant MAX_HASHES_PER_ANCHORING = 100;

    /// @notice Account allowed to anchor L1→L2 message hashes (the devnet coordinator).
    address public l1l2MessageSetter;
    /// @notice Lowest fee `sendMessage` accepts.
    uint256 public minimumFeeInWei;
    /// @notice Number of the last L1→L2 message anchored here (0 before the first anchoring).
    uint256 public lastAnchoredL1MessageNumber;
    /// @notice L1 rolling hash after each anchored batch, keyed by the batch's final L1 message number.
    mapping(uint256 => bytes32) public l1RollingHashes;
    /// @notice 0 unknown, 1 claimable (anchored), 2 claimed.
    mapping(bytes32 => uint256) public inboxL1L2MessageStatus;

    event L1L2MessageSetterChanged(address indexed previousSetter, address indexed newSetter);
    event MinimumFeeChanged(uint256 previousMinimumFee, uint256 newMinimumFee);
    /// @dev Lists only the hashes this call made claimable (a hash already in the inbox is not repeated).
    event L1L2MessageHashesAddedToInbox(bytes32[] messageHashes);
    event RollingHashUpdated(uint256 indexed messageNumber, bytes32 indexed rollingHash);

    error CallerIsNotTheL1L2MessageSetter(address caller);
    error FeeTooLow();
    error MessageHashesListLengthIsZero();
    error MessageHashesListLengthHigherThanOneHundred(uint256 length);
    error L1MessageNumberSynchronizationWrong(uint256 expected, uint256 found);
    error FinalMessageNumberMismatch(uint256 expected, uint256 found);
    error L1RollingHashMismatch(bytes32 expected, bytes32 computed);
    error MessageDoesNotExistOrHasAlreadyBeenClaimed(bytes32 messageHash);

    modifier onlyL1L2MessageSetter() {
        if (msg.sender != l1l2MessageSetter) revert CallerIsNotTheL1L2MessageSetter(msg.sender);
        _;
    }

    /// @param _l1l2MessageSetter account allowed to call `anchorL1L2MessageHashes`
    /// @param _minimumFeeInWei lowest fee accepted by `sendMessage`
    constructor(address _l1l2MessageSetter, uint256 _minimumFeeInWei) {
        if (_l1l2MessageSetter == address(0)) revert ZeroAddressNotAllowed();
        l1l2MessageSetter = _l1l2MessageSetter;
        minimumFeeInWei = _minimumFeeInWei;
        emit L1L2MessageSetterChanged(address(0), _l1l2MessageSetter);
        emit MinimumFeeChanged(0, _minimumFeeInWei);
    }

    function setL1L2MessageSetter(address _l1l2MessageSetter) external onlyOwner {
        if (_l1l2MessageSetter == address(0)) revert ZeroAddressNotAllowed();
        emit L1L2MessageSetterChanged(l1l2MessageSetter, _l1l2MessageSetter);
        l1l2MessageSetter = _l1l2MessageSetter;
    }

    function setMinimumFee(uint256 _minimumFeeInWei) external onlyOwner {
        emit MinimumFeeChanged(minimumFeeInWei, _minimumFeeInWei);
        minimumFeeInWei = _minimumFeeInWei;
    }

    /// @notice Sends a message to L1: `_fee` must be at least `minimumFeeInWei` and covered by `msg.value`;
    ///         the rest of `msg.value` is the value delivered to `_to`. The fee stays in the contract until
    ///         the message is claimed on L1, where it is paid to the claimer.
    function sendMessage(address _to, uint256 _fee, bytes calldata _calldata) external payable {
        if (_fee < minimumFeeInWei) revert FeeTooLow();
        _sendMessage(_to, _fee, _calldata);
    }

    /// @notice Makes L1→L2 messages `_startingMessageNumber`..`_finalMessageNumber` claimable.
    /// @dev The batch must continue exactly where the previous one ended, and the L1 rolling hash recomputed
    ///      from the previous anchored one over `_messageHashes` must equal `_finalRollingHash` (the value L1
    ///      stored for `_finalMessageNumber`), so no message can be skipped, reordered or invented.
    function anchorL1L2MessageHashes(
        bytes32[] calldata _messageHashes,
        uint256 _startingMessageNumber,
        uint256 _finalMessageNumber,
        bytes32 _finalRollingHash
    ) external onlyL1L2MessageSetter {
        uint256 count = _messageHashes.length;
        if (count == 0) revert MessageHashesListLengthIsZero();
        if (count > MAX_HASHES_PER_ANCHORING) revert MessageHashesListLengthHigherThanOneHundred(count);

        uint256 lastAnchored = lastAnchoredL1MessageNumber;
        if (_startingMessageNumber != lastAnchored + 1) {
            revert L1MessageNumberSynchronizationWrong(lastAnchored + 1, _startingMessageNumber);
        }
        uint256 expectedFinal = _startingMessageNumber + count - 1;
        if (_finalMessageNumber != expectedFinal) revert FinalMessageNumberMismatch(expectedFinal, _finalMessageNumber);

        bytes32 rollingHash = l1RollingHashes[lastAnchored];
        bytes32[] memory added = new bytes32[](count);
        uint256 addedCount;
        for (uint256 i = 0; i < count; ++i) {
            bytes32 messageHash = _messageHashes[i];
            rollingHash = MessageHashing.nextRollingHash(rollingHash, messageHash);
            if (inboxL1L2MessageStatus[messageHash] == INBOX_STATUS_UNKNOWN) {
                inboxL1L2MessageStatus[messageHash] = INBOX_STATUS_RECEIVED;
                added[addedCount++] = messageHash;
            }
        }
        if (rollingHash != _finalRollingHash) revert L1RollingHashMismatch(_finalRollingHash, rollingHash);

        lastAnchoredL1MessageNumber = _finalMessageNumber;
        l1RollingHashes[_finalMessageNumber] = rollingHash;

        if (addedCount > 0) {
            // Shrink the array in place to the hashes actually added.
            assembly {
                mstore(added, addedCount)
            }
            emit L1L2MessageHashesAddedToInbox(added);
        }
        emit RollingHashUpdated(_finalMessageNumber, rollingHash);
    }

    /// @notice Claims an anchored L1→L2 message and delivers it (value + calldata to `_to`, fee to
    ///         `_feeRecipient` or the caller). The arguments must be exactly those of the L1 `MessageSent`.
    function claimMessage(
        address _from,
        address _to,
        uint256 _fee,
        uint256 _value,
        address _feeRecipient,
        bytes calldata _calldata,
        uint256 _nonce
    ) external nonReentrant {
        bytes32 messageHash = MessageHashing.hashMessage(_from, _to, _fee, _value, _nonce, _calldata);
        if (inboxL1L2MessageStatus[messageHash] != INBOX_STATUS_RECEIVED) {
            revert MessageDoesNotExistOrHasAlreadyBeenClaimed(messageHash);
        }
        inboxL1L2MessageStatus[messageHash] = INBOX_STATUS_CLAIMED;

        _deliver(_to, _fee, _value, _feeRecipient, _calldata);
        emit MessageClaimed(messageHash);
    }
}
