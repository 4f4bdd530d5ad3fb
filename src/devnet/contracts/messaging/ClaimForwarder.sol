// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title ClaimForwarder
/// @notice A minimal claim-via contract for the relayer's `L1_CLAIM_VIA_ADDRESS` / `L2_CLAIM_VIA_ADDRESS`:
///         every call (with its value) is passed on unchanged to the message service it was built for, its
///         return data or revert data comes back unchanged, and a `Forwarded` event names who called. The
///         devnet deploys one per chain so operators and tests can try claiming through a proxy.
/// @dev What a claim-via contract must do for the relayer: forward the relayer's calldata to the message
///      service as is, bubble revert data unchanged (the relayer recognises `RateLimitExceeded` and the
///      "already claimed" errors in it), and leave the fee alone: the relayer names itself as fee recipient
///      in the claim, so the message service pays it directly and nothing is left here.
contract ClaimForwarder {
    /// @notice The message service every call is forwarded to.
    address public immutable messageService;

    event Forwarded(address indexed caller, bytes4 indexed selector, uint256 value);

    error ZeroAddressNotAllowed();

    constructor(address _messageService) {
        if (_messageService == address(0)) revert ZeroAddressNotAllowed();
        messageService = _messageService;
    }

    /// @notice Forwards any call (any selector, or none) with its value to `messageService`.
    fallback() external payable {
        (bool ok, bytes memory result) = messageService.call{value: msg.value}(msg.data);
        if (!ok) {
            assembly {
                revert(add(result, 0x20), mload(result))
            }
        }
        emit Forwarded(msg.sender, bytes4(msg.data), msg.value);
        assembly {
            return(add(result, 0x20), mload(result))
        }
    }
}
