// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title ReentrancyGuard
/// @notice Blocks re-entry into functions that hand control to arbitrary contracts (message delivery,
///         DEX token transfers).
/// @dev A plain storage flag (not transient storage) so the contracts also compile for pre-Cancun EVMs.
///      1 = idle, 2 = entered; never 0, so the reset does not refund-and-repay a zero slot.
abstract contract ReentrancyGuard {
    uint256 private _reentrancyStatus = 1;

    error ReentrantCall();

    modifier nonReentrant() {
        if (_reentrancyStatus == 2) revert ReentrantCall();
        _reentrancyStatus = 2;
        _;
        _reentrancyStatus = 1;
    }
}
