// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title Ownable
/// @notice Single-owner access control for the devnet contracts.
/// @dev Written here rather than imported from OpenZeppelin because the devnet contracts must compile
///      with no npm dependencies. Only what the devnet needs: an owner, a check and a transfer.
abstract contract Ownable {
    /// @notice Account allowed to call the `onlyOwner` functions (the deployer at first).
    address public owner;

    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);

    error CallerIsNotTheOwner(address caller);
    /// @dev Shared by every devnet contract that rejects the zero address for a role or a recipient.
    error ZeroAddressNotAllowed();

    constructor() {
        _transferOwnership(msg.sender);
    }

    modifier onlyOwner() {
        if (msg.sender != owner) revert CallerIsNotTheOwner(msg.sender);
        _;
    }

    /// @notice Hands the owner role to `newOwner`; the zero address is refused so the role cannot be lost.
    function transferOwnership(address newOwner) external onlyOwner {
        if (newOwner == address(0)) revert ZeroAddressNotAllowed();
        _transferOwnership(newOwner);
    }

    function _transferOwnership(address newOwner) internal {
        address previous = owner;
        owner = newOwner;
        emit OwnershipTransferred(previous, newOwner);
    }
}
