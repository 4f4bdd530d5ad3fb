// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "./ERC20.sol";
import {Ownable} from "../common/Ownable.sol";

/// @title TestToken
/// @notice Configurable ERC-20 for the devnet scenario (stablecoin, 6-decimal token, spammy names, ...).
contract TestToken is ERC20, Ownable {
    constructor(
        string memory name_,
        string memory symbol_,
        uint8 decimals_,
        address initialHolder,
        uint256 initialSupply
    ) ERC20(name_, symbol_, decimals_) {
        if (initialSupply > 0) _mint(initialHolder, initialSupply);
    }

    function mint(address to, uint256 amount) external onlyOwner {
        _mint(to, amount);
    }
}
