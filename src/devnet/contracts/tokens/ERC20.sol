// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20Core} from "./ERC20Core.sol";

/// @title ERC20
/// @notice Standard ERC-20 with string name and symbol (the usual metadata form).
/// @dev name()/symbol() are virtual so test tokens can misbehave on purpose.
abstract contract ERC20 is ERC20Core {
    string private _name;
    string private _symbol;

    constructor(string memory name_, string memory symbol_, uint8 decimals_) ERC20Core(decimals_) {
        _name = name_;
        _symbol = symbol_;
    }

    function name() public view virtual returns (string memory) {
        return _name;
    }

    function symbol() public view virtual returns (string memory) {
        return _symbol;
    }
}
