// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20} from "./ERC20.sol";

/// @title RevertingMetadataToken
/// @notice ERC-20 whose name() always reverts (symbol() and the rest work), so indexers can be tested on
///         tokens with broken metadata.
contract RevertingMetadataToken is ERC20 {
    error MetadataUnavailable();

    constructor(string memory symbol_, uint8 decimals_, address initialHolder, uint256 initialSupply)
        ERC20("", symbol_, decimals_)
    {
        if (initialSupply > 0) _mint(initialHolder, initialSupply);
    }

    function name() public pure override returns (string memory) {
        revert MetadataUnavailable();
    }
}
