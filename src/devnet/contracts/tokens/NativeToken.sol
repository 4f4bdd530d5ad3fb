// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "./ERC20.sol";
import {Ownable} from "../common/Ownable.sol";

/// @title NativeToken
/// @notice The devnet chain's own token: 18 decimals, minted by the owner, burnable by any holder (burns emit
///         Transfer to the zero address and lower totalSupply, which the token API's supply job follows).
contract NativeToken is ERC20, Ownable {
    constructor(string memory name_, string memory symbol_, address initialHolder, uint256 initialSupply)
        ERC20(name_, symbol_, 18)
    {
        if (initialSupply > 0) _mint(initialHolder, initialSupply);
    }

    function mint(address to, uint256 amount) external onlyOwner {
        _mint(to, amount);
    }

    function burn(uint256 amount) external {
        _burn(msg.sender, amount);
    }
}
