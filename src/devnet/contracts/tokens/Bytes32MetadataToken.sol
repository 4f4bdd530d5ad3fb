// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20Core} from "./ERC20Core.sol";

/// @title Bytes32MetadataToken
/// @notice ERC-20 whose name() and symbol() return bytes32 (like early tokens such as MKR), so indexers can
///         be tested on decoding metadata that is not an ABI string.
contract Bytes32MetadataToken is ERC20Core {
    bytes32 public immutable name;
    bytes32 public immutable symbol;

    /// @param name_ right-padded ASCII, e.g. 0x4d616b6572000000...
    constructor(bytes32 name_, bytes32 symbol_, uint8 decimals_, address initialHolder, uint256 initialSupply)
        ERC20Core(decimals_)
    {
        name = name_;
        symbol = symbol_;
        if (initialSupply > 0) _mint(initialHolder, initialSupply);
    }
}
