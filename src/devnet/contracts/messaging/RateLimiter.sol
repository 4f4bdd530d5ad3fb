// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {Ownable} from "../common/Ownable.sol";

/// @title RateLimiter
/// @notice Caps the wei (fee + value) that L1 claims may pay out per period, bounding what a faulty
///         finalization could drain. The relayer reads these public values to skip claims that would revert
///         and recognises `RateLimitExceeded` to retry later.
/// @dev Period semantics: the first claim after `currentPeriodEnd` opens a new period that ends
///      `periodInSeconds` later and restarts the running total.
abstract contract RateLimiter is Ownable {
    /// @notice Length of a rate-limit period.
    uint256 public periodInSeconds;
    /// @notice Maximum wei paid out (fee + value) per period.
    uint256 public limitInWei;
    /// @notice Timestamp at which the current period ends.
    uint256 public currentPeriodEnd;
    /// @notice Wei paid out so far in the current period.
    uint256 public currentPeriodAmountInWei;

    event RateLimitInitialized(uint256 periodInSeconds, uint256 limitInWei, uint256 currentPeriodEnd);
    event LimitAmountChanged(address indexed changedBy, uint256 limitInWei, bool amountUsedReset);

    error RateLimitExceeded();
    error PeriodIsZero();

    constructor(uint256 _periodInSeconds, uint256 _limitInWei) {
        if (_periodInSeconds == 0) revert PeriodIsZero();
        periodInSeconds = _periodInSeconds;
        limitInWei = _limitInWei;
        currentPeriodEnd = block.timestamp + _periodInSeconds;
        emit RateLimitInitialized(_periodInSeconds, _limitInWei, currentPeriodEnd);
    }

    /// @notice Sets the per-period limit. When `_resetAmountUsed` is true the running total of the current
    ///         period restarts at zero (lets an operator unblock claims after raising the limit).
    function setRateLimit(uint256 _limitInWei, bool _resetAmountUsed) external onlyOwner {
        limitInWei = _limitInWei;
        if (_resetAmountUsed) currentPeriodAmountInWei = 0;
        emit LimitAmountChanged(msg.sender, _limitInWei, _resetAmountUsed);
    }

    /// @dev Adds `_amount` to the current period, opening a new period first when the current one is over;
    ///      reverts with `RateLimitExceeded` when the total would pass the limit.
    function _addUsedAmount(uint256 _amount) internal {
        uint256 total;
        if (block.timestamp > currentPeriodEnd) {
            currentPeriodEnd = block.timestamp + periodInSeconds;
            total = _amount;
        } else {
            total = currentPeriodAmountInWei + _amount;
        }
        if (total > limitInWei) revert RateLimitExceeded();
        currentPeriodAmountInWei = total;
    }
}
