// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "../common/Ownable.sol";
import {ReentrancyGuard} from "../common/ReentrancyGuard.sol";
import {MessageHashing} from "./MessageHashing.sol";

/// @title MessageServiceBase
/// @notice What the L1 and L2 message services share: the `MessageSent`/`MessageClaimed` events, message
///         numbering and hashing on send, and delivery (value + calldata to `to`, fee to the claimer) on claim.
/// @dev Value model: the sending side keeps msg.value (fee + value) in the contract; the receiving side pays
///      fee + value out of its own balance, so each service must be funded (hence `receive()`).
abstract contract MessageServiceBase is Ownable, ReentrancyGuard {
    /// @notice Number given to the next message sent from this chain. Starts at 1 so that message number 0
    ///         (and rolling hash 0) can stand for "nothing yet".
    uint256 public nextMessageNumber = 1;

    event MessageSent(
        address indexed _from,
        address indexed _to,
        uint256 _fee,
        uint256 _value,
        uint256 _nonce,
        bytes _calldata,
        bytes32 indexed _messageHash
    );
    event MessageClaimed(bytes32 indexed _messageHash);

    error ValueSentTooLow(uint256 valueSent, uint256 fee);
    /// @dev Raised when the destination call fails without revert data (e.g. a non-payable target receiving
    ///      value); when the target reverts with data, that data is re-thrown unchanged instead.
    error MessageSendingFailed(address destination);
    error FeePaymentFailed(address recipient);

    /// @notice Lets the bridge be funded so it can pay out claims of messages sent from the other chain.
    receive() external payable {}

    /// @dev Numbers, hashes and announces a message; `msg.value - _fee` is the value delivered to `_to`.
    function _sendMessage(address _to, uint256 _fee, bytes calldata _calldata)
        internal
        returns (uint256 messageNumber, bytes32 messageHash)
    {
        if (_to == address(0)) revert ZeroAddressNotAllowed();
        if (msg.value < _fee) revert ValueSentTooLow(msg.value, _fee);
        uint256 value = msg.value - _fee;
        messageNumber = nextMessageNumber++;
        messageHash = MessageHashing.hashMessage(msg.sender, _to, _fee, value, messageNumber, _calldata);
        emit MessageSent(msg.sender, _to, _fee, value, messageNumber, _calldata, messageHash);
    }

    /// @dev Delivers a claimed message: calls `_to` with `_value` and `_calldata` (an empty calldata is a plain
    ///      transfer to an EOA or the target's receive()), then pays `_fee` to `_feeRecipient`, or to the
    ///      claimer when it is the zero address. The caller must have marked the message claimed already.
    function _deliver(address _to, uint256 _fee, uint256 _value, address _feeRecipient, bytes calldata _calldata)
        internal
    {
        (bool success, bytes memory returnData) = _to.call{value: _value}(_calldata);
        if (!success) {
            if (returnData.length > 0) {
                // Bubble up the callee's revert data so the claimer sees the real reason.
                assembly {
                    revert(add(returnData, 0x20), mload(returnData))
                }
            }
            revert MessageSendingFailed(_to);
        }

        if (_fee > 0) {
            address recipient = _feeRecipient == address(0) ? msg.sender : _feeRecipient;
            (bool paid,) = recipient.call{value: _fee}("");
            if (!paid) revert FeePaymentFailed(recipient);
        }
    }
}
