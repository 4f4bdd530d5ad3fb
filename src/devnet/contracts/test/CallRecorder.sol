// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title CallRecorder
/// @notice Destination for test messages with calldata: records every `record` call so tests can check that a
///         claimed message executed with the right sender, value and arguments, and offers `fail` to test
///         claims whose destination call reverts.
contract CallRecorder {
    struct RecordedCall {
        address sender;
        uint256 value;
        uint256 amount;
        bytes note;
    }

    RecordedCall[] private _calls;

    event Recorded(address indexed sender, uint256 value, uint256 amount, bytes note);
    event Received(address indexed sender, uint256 value);

    /// @dev Carries the caller so a test can tell the error came from here and not from the bridge.
    error DeliberateFailure(address caller);

    /// @notice Stores (msg.sender, msg.value, amount, note).
    function record(uint256 amount, bytes calldata note) external payable {
        _calls.push(RecordedCall(msg.sender, msg.value, amount, note));
        emit Recorded(msg.sender, msg.value, amount, note);
    }

    function callCount() external view returns (uint256) {
        return _calls.length;
    }

    /// @notice The `index`-th recorded call (0-based).
    function calls(uint256 index) external view returns (address sender, uint256 value, uint256 amount, bytes memory note) {
        RecordedCall storage c = _calls[index];
        return (c.sender, c.value, c.amount, c.note);
    }

    /// @notice Always reverts with `DeliberateFailure` (payable so a message carrying value still reaches it).
    function fail() external payable {
        revert DeliberateFailure(msg.sender);
    }

    /// @notice Accepts plain value transfers (messages without calldata).
    receive() external payable {
        emit Received(msg.sender, msg.value);
    }
}
